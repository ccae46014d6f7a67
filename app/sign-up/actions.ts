"use server";
/**
 * The sign-up form's action (works without JavaScript): parses the fields with zod, creates the account through
 * better-auth (which signs the new user in and sets the cookie on this response) and redirects to /wallet, or
 * answers with what went wrong and the email as typed, so the form shows it again. The password is never sent back.
 */
import { cookies, headers } from "next/headers";
import { redirect } from "next/navigation";
import { noteSignInDevice } from "@/lib/auth/note-sign-in-device";
import { z } from "zod";
import { emailField, newPasswordField } from "@/lib/auth/credential-fields";
import { signUpWithPassword } from "@/lib/auth/sign-up-with-password";

/** What the form shows after a failed attempt. */
export type SignUpState = {
  readonly error: "email" | "password" | "taken" | "throttled";
  /** The email as typed (at most 320 characters kept). */
  readonly email: string;
} | null;

const signUpForm = z.object({ email: emailField, password: newPasswordField });

export async function signUpAction(_previous: SignUpState, formData: FormData): Promise<SignUpState> {
  const email = String(formData.get("email") ?? "").slice(0, 320);
  const form = signUpForm.safeParse({ email: formData.get("email"), password: formData.get("password") });
  if (!form.success) {
    const emailIsWrong = form.error.issues.some((issue) => issue.path[0] === "email");
    return { error: emailIsWrong ? "email" : "password", email };
  }
  const requestHeaders = await headers();
  const result = await signUpWithPassword(form.data, requestHeaders);
  switch (result.kind) {
    case "created":
      await noteSignInDevice(result.userId, await cookies(), requestHeaders);
      return redirect("/wallet");
    case "duplicate_email":
      return { error: "taken", email };
    case "invalid_email":
      return { error: "email", email };
    case "invalid_password":
      return { error: "password", email };
    case "invalid_name":
      // The page sends no name: the default (the email's local part, cut to 100) is always valid.
      return { error: "email", email };
    case "throttled":
      return { error: "throttled", email };
  }
}
