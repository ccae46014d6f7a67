import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "@/lib/auth/credential-fields";
import { getSessionUser } from "@/lib/auth/session-user";
import { SignUpForm } from "./sign-up-form";

export const metadata: Metadata = { title: "Create an account" };

/**
 * The sign-up page. Without email verification a sign-up form cannot hide that an email is registered: the person
 * would otherwise be left with an account they cannot use. A signed-in visitor goes to the wallet.
 */
export default async function SignUpPage() {
  if (await getSessionUser()) redirect("/wallet");
  return (
    <main className="auth-page">
      <h1>Create an account</h1>
      <SignUpForm passwordMin={PASSWORD_MIN_LENGTH} passwordMax={PASSWORD_MAX_LENGTH} />
      <p className="auth-switch">
        Already have an account? <Link href="/sign-in">Sign in</Link>
      </p>
    </main>
  );
}
