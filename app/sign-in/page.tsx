import type { Metadata } from "next";
import Link from "next/link";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { z } from "zod";
import { emailField, signInPasswordField } from "@/lib/auth/credential-fields";
import { getSessionUser } from "@/lib/auth/session-user";
import { signInWithPassword } from "@/lib/auth/sign-in-with-password";

export const metadata: Metadata = { title: "Sign in" };

/**
 * What the page may say after a failed attempt, by the `error` query value the action redirects with. A fixed
 * list: nothing from the query string is ever echoed. One message for unknown email and wrong password, so the
 * page never reveals whether an account exists.
 */
const ERROR_MESSAGES = {
  credentials: "Wrong email or password",
  throttled: "Too many failed sign-in attempts for this email from your network. Wait 15 minutes, then try again.",
} as const;
const errorParam = z.enum(["credentials", "throttled"]);

const signInForm = z.object({ email: emailField, password: signInPasswordField });

/**
 * Server action for the form (works without JavaScript): parses the fields with zod, signs in through
 * better-auth (the session cookie is set on this response) and redirects to /wallet, or back here with an
 * error code (post/redirect/get, so reloading the page does not resend the password).
 */
async function signInAction(formData: FormData): Promise<void> {
  "use server";
  const form = signInForm.safeParse({ email: formData.get("email"), password: formData.get("password") });
  if (!form.success) redirect("/sign-in?error=credentials");
  const result = await signInWithPassword(form.data, await headers());
  switch (result.kind) {
    case "signed_in":
      return redirect("/wallet");
    case "wrong_credentials":
      return redirect("/sign-in?error=credentials");
    case "throttled":
      return redirect("/sign-in?error=throttled");
  }
}

export default async function SignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  if (await getSessionUser()) redirect("/wallet");
  const error = errorParam.safeParse((await searchParams).error);
  return (
    <main className="auth-page">
      <h1>Sign in</h1>
      {error.success && (
        <p role="alert" className="form-error">
          {ERROR_MESSAGES[error.data]}
        </p>
      )}
      <form action={signInAction} className="auth-form">
        <label htmlFor="email">Email</label>
        <input id="email" name="email" type="email" autoComplete="username" required />
        <label htmlFor="password">Password</label>
        <input id="password" name="password" type="password" autoComplete="current-password" required />
        <button type="submit">Sign in</button>
      </form>
      <p className="auth-switch">
        No account yet? <Link href="/sign-up">Create one</Link>
      </p>
    </main>
  );
}
