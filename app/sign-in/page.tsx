import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { homePath } from "@/lib/auth/home-path";
import { getSessionUser } from "@/lib/auth/session-user";
import { type SignInNotice, SignInForm } from "./sign-in-form";

export const metadata: Metadata = { title: "Sign in" };

/**
 * The notice the address asks for: `?signed-out=1` (the sign-out actions), `?ended=password-changed` (decision 056),
 * `?password-reset=1` (a reset link used, decision 054).
 */
function noticeOf(params: Record<string, string | string[] | undefined>): SignInNotice | null {
  if (params.ended === "password-changed") return "password_changed";
  if (params["password-reset"] === "1") return "password_reset";
  if (params["signed-out"] === "1") return "signed_out";
  return null;
}

/**
 * The sign-in page. After signing out (`?signed-out=1`) it says so; a browser whose session ended because the password
 * was changed in another one (`?ended=password-changed`, set by lib/auth/session-user.ts `signInPath`) is told that,
 * and so is one that has just reset its password (`?password-reset=1`, docs/decisions/054).
 * The notice gives way to the form's own message once the person tries to sign in. A signed-in visitor goes to their
 * first page (/admin for an admin, /wallet otherwise).
 */
export default async function SignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const user = await getSessionUser();
  if (user) redirect(homePath(user.role));
  const notice = noticeOf(await searchParams);
  return (
    <main className="auth-page">
      <h1>Sign in</h1>
      <SignInForm notice={notice} />
      <p className="auth-switch">
        <Link href="/forgot-password">Forgot your password?</Link>
      </p>
      <p className="auth-switch">
        No account yet? <Link href="/sign-up">Create one</Link>
      </p>
    </main>
  );
}
