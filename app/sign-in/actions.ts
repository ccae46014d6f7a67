"use server";
/**
 * The sign-in form's action (works without JavaScript): parses the fields with zod, signs in through better-auth
 * (the session cookie is set on this response) and redirects to the user's first page (/admin for an admin,
 * /wallet otherwise: lib/auth/home-path.ts), or answers with what went wrong and the
 * email as typed, so the form shows it again. The password is never sent back.
 */
import { cookies, headers } from "next/headers";
import { redirect } from "next/navigation";
import { noteSignInDevice } from "@/lib/auth/note-sign-in-device";
import { z } from "zod";
import { emailField, signInPasswordField } from "@/lib/auth/credential-fields";
import { homePath } from "@/lib/auth/home-path";
import { signInWithPassword } from "@/lib/auth/sign-in-with-password";

/** What the form shows after a failed attempt. */
export type SignInState = {
  readonly error: "credentials" | "throttled";
  /** The email as typed (at most 320 characters kept). */
  readonly email: string;
  /** `throttled`: seconds until a new attempt can succeed. */
  readonly retryAfterS?: number;
} | null;

const signInForm = z.object({ email: emailField, password: signInPasswordField });

export async function signInAction(_previous: SignInState, formData: FormData): Promise<SignInState> {
  const typedEmail = String(formData.get("email") ?? "").slice(0, 320);
  const form = signInForm.safeParse({ email: formData.get("email"), password: formData.get("password") });
  // One answer for a malformed email and a wrong password: sign-in never says which part was wrong.
  if (!form.success) return { error: "credentials", email: typedEmail };
  const requestHeaders = await headers();
  const result = await signInWithPassword(form.data, requestHeaders);
  switch (result.kind) {
    case "signed_in":
      await noteSignInDevice(result.userId, await cookies(), requestHeaders);
      return redirect(homePath(result.role));
    case "wrong_credentials":
      return { error: "credentials", email: typedEmail };
    case "throttled":
      return { error: "throttled", email: typedEmail, retryAfterS: result.retryAfterS };
  }
}
