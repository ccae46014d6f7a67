import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { getSessionUser } from "@/lib/auth/session-user";
import { SignInForm } from "./sign-in-form";

export const metadata: Metadata = { title: "Sign in" };

/**
 * The sign-in page. After signing out (`?signed-out=1`, set by the sign-out actions) or a password reset
 * (`?password-reset=1`) it says so. A signed-in visitor goes to the wallet.
 */
export default async function SignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  if (await getSessionUser()) redirect("/wallet");
  const params = await searchParams;
  const signedOut = params["signed-out"] === "1";
  const passwordReset = params["password-reset"] === "1";
  return (
    <main className="auth-page">
      <h1>Sign in</h1>
      {signedOut && (
        <p role="status" className="form-notice" data-testid="signed-out">
          You are signed out.
        </p>
      )}
      {passwordReset && (
        <p role="status" className="form-notice" data-testid="password-reset">
          Your password was changed and every device signed out. Sign in with the new password.
        </p>
      )}
      <SignInForm />
      <p className="auth-switch">
        <Link href="/forgot-password">Forgot your password?</Link>
      </p>
      <p className="auth-switch">
        No account yet? <Link href="/sign-up">Create one</Link>
      </p>
    </main>
  );
}
