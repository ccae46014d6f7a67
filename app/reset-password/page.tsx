import type { Metadata } from "next";
import Link from "next/link";
import { ResetPasswordForm } from "./reset-password-form";

export const metadata: Metadata = { title: "Choose a new password" };

/**
 * Where a reset link lands (better-auth checks the token and redirects here with `?token=`, or with
 * `?error=INVALID_TOKEN` when it is unknown or expired).
 */
export default async function ResetPasswordPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const params = await searchParams;
  const token = typeof params.token === "string" ? params.token.slice(0, 200) : "";
  return (
    <main className="auth-page">
      <h1>Choose a new password</h1>
      {token ? (
        <ResetPasswordForm token={token} />
      ) : (
        <p role="alert" className="form-error" data-testid="reset-link-invalid">
          This link has expired or was already used. <Link href="/forgot-password">Ask for a new one</Link>.
        </p>
      )}
    </main>
  );
}
