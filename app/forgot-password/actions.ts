"use server";
/**
 * The "forgot password" form's action (works without JavaScript): asks better-auth for a reset link through
 * lib/auth/request-password-reset.ts and answers the same whether or not the address has an account.
 */
import { headers } from "next/headers";
import { requestPasswordReset } from "@/lib/auth/request-password-reset";

/** What the form shows after a request. */
export type ForgotPasswordState = {
  readonly outcome: "requested" | "throttled";
  /** The email as typed (at most 320 characters kept). */
  readonly email: string;
  readonly retryAfterS?: number;
} | null;

export async function forgotPasswordAction(
  _previous: ForgotPasswordState,
  formData: FormData,
): Promise<ForgotPasswordState> {
  const email = String(formData.get("email") ?? "")
    .trim()
    .slice(0, 320);
  const result = await requestPasswordReset(email, await headers());
  if (result.kind === "throttled") return { outcome: "throttled", email, retryAfterS: result.retryAfterS };
  return { outcome: "requested", email };
}
