"use server";
/**
 * The security page's actions (contract section 9): change the password (other sessions end; API tokens too unless
 * kept) and sign out everywhere. A refused change answers on the form (which keeps what was typed); a done one
 * redirects (post/redirect/get): the change replaces this browser's session cookie, and only a new request carries
 * the new one (a re-render inside the action's own request would still hold the old, revoked session).
 */
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { z } from "zod";
import { changePassword, signOutEverywhere } from "@/lib/auth/change-password";
import { requireSessionUser } from "@/lib/auth/session-user";

/** What the change-password form shows after a refused attempt (a done one redirects with `?result=`). */
export type ChangePasswordState = {
  readonly result: "wrong" | "invalid" | "throttled";
} | null;

const passwordForm = z.object({
  currentPassword: z.string().max(1024),
  newPassword: z.string().max(1024),
  // An unticked checkbox sends nothing: absent means "revoke the tokens".
  keepApiTokens: z.literal("on").optional(),
});
const everywhereForm = z.object({ keepApiTokens: z.literal("on").optional() });

/** Changes the password: other sessions end; API tokens too unless kept. */
export async function changePasswordAction(
  _previous: ChangePasswordState,
  formData: FormData,
): Promise<ChangePasswordState> {
  const user = await requireSessionUser();
  const form = passwordForm.safeParse({
    currentPassword: formData.get("currentPassword") ?? "",
    newPassword: formData.get("newPassword") ?? "",
    keepApiTokens: formData.get("keepApiTokens") ?? undefined,
  });
  if (!form.success) return { result: "invalid" };
  const result = await changePassword(
    {
      userId: user.userId,
      email: user.email,
      currentPassword: form.data.currentPassword,
      newPassword: form.data.newPassword,
      keepApiTokens: form.data.keepApiTokens === "on",
    },
    await headers(),
  );
  switch (result.kind) {
    case "changed":
      return redirect(`/settings/security?result=${result.apiTokensRevoked > 0 ? "changed-tokens" : "changed"}`);
    case "wrong_password":
      return { result: "wrong" };
    case "invalid_password":
      return { result: "invalid" };
    case "throttled":
      return { result: "throttled" };
  }
}

/** Signs out every session of the user, this one included (then the sign-in page says so); API tokens too unless kept. */
export async function signOutEverywhereAction(formData: FormData): Promise<void> {
  const user = await requireSessionUser();
  const form = everywhereForm.safeParse({ keepApiTokens: formData.get("keepApiTokens") ?? undefined });
  await signOutEverywhere(
    { userId: user.userId, keepApiTokens: form.success && form.data.keepApiTokens === "on" },
    await headers(),
  );
  redirect("/sign-in?signed-out=1");
}
