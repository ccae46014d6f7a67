import type { Metadata } from "next";
import Link from "next/link";
import { ForgotPasswordForm } from "./forgot-password-form";

export const metadata: Metadata = { title: "Forgot password" };

/** "Forgot password": asks for a single-use link by mail (docs/decisions/054-mail-outbox.md). */
export default function ForgotPasswordPage() {
  return (
    <main className="auth-page">
      <h1>Forgot your password?</h1>
      <p>Type the address you signed up with. We will mail you a link to choose a new password.</p>
      <ForgotPasswordForm />
      <p className="auth-switch">
        Remembered it? <Link href="/sign-in">Sign in</Link>
      </p>
    </main>
  );
}
