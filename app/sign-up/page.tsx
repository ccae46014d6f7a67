import type { Metadata } from "next";
import Link from "next/link";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { z } from "zod";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "@/lib/auth/auth";
import { emailField, newPasswordField } from "@/lib/auth/credential-fields";
import { getSessionUser } from "@/lib/auth/session-user";
import { signUpWithPassword } from "@/lib/auth/sign-up-with-password";

export const metadata: Metadata = { title: "Create an account" };

/**
 * What the page may say after a failed attempt, by the `error` query value the action redirects with (a fixed
 * list; nothing from the query string is echoed). Without email verification, a sign-up form cannot hide that
 * an email is registered: the person would otherwise be left with an account they cannot use.
 */
const ERROR_MESSAGES = {
  email: "Enter a valid email address.",
  password: `Use a password of ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters.`,
  taken: "An account with this email already exists. Sign in instead.",
  throttled: "Too many accounts were created from your network in the last hour. Try again later.",
} as const;
const errorParam = z.enum(["email", "password", "taken", "throttled"]);

const signUpForm = z.object({ email: emailField, password: newPasswordField });

/**
 * Server action for the form (works without JavaScript): parses the fields with zod, creates the account
 * through better-auth (which signs the new user in and sets the cookie on this response), then redirects to
 * /wallet, or back here with an error code (post/redirect/get).
 */
async function signUpAction(formData: FormData): Promise<void> {
  "use server";
  const form = signUpForm.safeParse({ email: formData.get("email"), password: formData.get("password") });
  if (!form.success) {
    const emailIsWrong = form.error.issues.some((issue) => issue.path[0] === "email");
    redirect(emailIsWrong ? "/sign-up?error=email" : "/sign-up?error=password");
  }
  const result = await signUpWithPassword(form.data, await headers());
  switch (result.kind) {
    case "created":
      return redirect("/wallet");
    case "duplicate_email":
      return redirect("/sign-up?error=taken");
    case "invalid_email":
      return redirect("/sign-up?error=email");
    case "invalid_password":
      return redirect("/sign-up?error=password");
    case "invalid_name":
      // The page sends no name: the default (the email's local part, cut to 100) is always valid.
      return redirect("/sign-up?error=email");
    case "throttled":
      return redirect("/sign-up?error=throttled");
  }
}

export default async function SignUpPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  if (await getSessionUser()) redirect("/wallet");
  const error = errorParam.safeParse((await searchParams).error);
  return (
    <main className="auth-page">
      <h1>Create an account</h1>
      {error.success && (
        <p role="alert" className="form-error">
          {ERROR_MESSAGES[error.data]}
        </p>
      )}
      <form action={signUpAction} className="auth-form">
        <label htmlFor="email">Email</label>
        <input id="email" name="email" type="email" autoComplete="email" required />
        <label htmlFor="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          aria-describedby="password-hint"
        />
        <p id="password-hint" className="field-hint">
          {PASSWORD_MIN_LENGTH} to {PASSWORD_MAX_LENGTH} characters.
        </p>
        <button type="submit">Create account</button>
      </form>
      <p className="auth-switch">
        Already have an account? <Link href="/sign-in">Sign in</Link>
      </p>
    </main>
  );
}
