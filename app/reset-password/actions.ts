"use server";
/**
 * The reset page's action (works without JavaScript): sets the new password with the link's token through
 * lib/auth/request-password-reset.ts, then sends the person to sign in with it.
 */
import { redirect } from "next/navigation";
import { resetPassword } from "@/lib/auth/reset-password";

/** What the form shows after a failed attempt. */
export type ResetPasswordState = { readonly error: "password" | "token" } | null;

export async function resetPasswordAction(
  _previous: ResetPasswordState,
  formData: FormData,
): Promise<ResetPasswordState> {
  const result = await resetPassword({
    token: String(formData.get("token") ?? ""),
    newPassword: String(formData.get("password") ?? ""),
  });
  if (result.kind === "reset") return redirect("/sign-in?password-reset=1");
  return { error: result.kind === "invalid_password" ? "password" : "token" };
}
