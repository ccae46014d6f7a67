import type { Metadata } from "next";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { z } from "zod";
import { changePassword, signOutEverywhere } from "@/lib/auth/change-password";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "@/lib/auth/credential-fields";
import { requireSessionUser } from "@/lib/auth/session-user";

export const metadata: Metadata = { title: "Security" };

/** What the page may say after an action, by the `result` query value (a fixed list: nothing is echoed). */
const MESSAGES = {
  changed: "Password changed. Every other session was signed out.",
  "changed-tokens": "Password changed. Every other session was signed out and your API tokens were revoked.",
  wrong: "The current password is not right.",
  invalid: `Use a new password of ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters.`,
  throttled: "Too many wrong passwords. Wait 15 minutes, then try again.",
} as const;
const resultParam = z.enum(["changed", "changed-tokens", "wrong", "invalid", "throttled"]);

const passwordForm = z.object({
  currentPassword: z.string(),
  newPassword: z.string(),
  // An unticked checkbox sends nothing: absent means "revoke the tokens".
  keepApiTokens: z.literal("on").optional(),
});
const everywhereForm = z.object({ keepApiTokens: z.literal("on").optional() });

/** Changes the password (contract section 9): other sessions end; API tokens too unless kept. */
async function changePasswordAction(formData: FormData): Promise<void> {
  "use server";
  const user = await requireSessionUser();
  const form = passwordForm.safeParse({
    currentPassword: formData.get("currentPassword") ?? "",
    newPassword: formData.get("newPassword") ?? "",
    keepApiTokens: formData.get("keepApiTokens") ?? undefined,
  });
  if (!form.success) redirect("/settings/security?result=invalid");
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
      return redirect("/settings/security?result=wrong");
    case "invalid_password":
      return redirect("/settings/security?result=invalid");
    case "throttled":
      return redirect("/settings/security?result=throttled");
  }
}

/** Signs out every session of the user, this one included; API tokens too unless kept. */
async function signOutEverywhereAction(formData: FormData): Promise<void> {
  "use server";
  const user = await requireSessionUser();
  const form = everywhereForm.safeParse({ keepApiTokens: formData.get("keepApiTokens") ?? undefined });
  await signOutEverywhere(
    { userId: user.userId, keepApiTokens: form.success && form.data.keepApiTokens === "on" },
    await headers(),
  );
  redirect("/sign-in");
}

export default async function SecurityPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  await requireSessionUser();
  const result = resultParam.safeParse((await searchParams).result);
  return (
    <main className="settings-page">
      <h1>Security</h1>
      {result.success && (
        <p role={result.data.startsWith("changed") ? "status" : "alert"} className="form-notice">
          {MESSAGES[result.data]}
        </p>
      )}
      <section aria-labelledby="password-heading">
        <h2 id="password-heading">Change password</h2>
        <form action={changePasswordAction} className="auth-form">
          <label htmlFor="current-password">Current password</label>
          <input
            id="current-password"
            name="currentPassword"
            type="password"
            autoComplete="current-password"
            required
          />
          <label htmlFor="new-password">New password</label>
          <input
            id="new-password"
            name="newPassword"
            type="password"
            autoComplete="new-password"
            minLength={PASSWORD_MIN_LENGTH}
            maxLength={PASSWORD_MAX_LENGTH}
            required
          />
          <label className="checkbox">
            <input type="checkbox" name="keepApiTokens" defaultChecked /> Keep my API tokens working
          </label>
          <button type="submit">Change password</button>
        </form>
      </section>
      <section aria-labelledby="everywhere-heading">
        <h2 id="everywhere-heading">Sign out everywhere</h2>
        <p>Ends every session of your account on every device, this one included.</p>
        <form action={signOutEverywhereAction} className="auth-form">
          <label className="checkbox">
            <input type="checkbox" name="keepApiTokens" defaultChecked /> Keep my API tokens working
          </label>
          <button type="submit">Sign out everywhere</button>
        </form>
      </section>
    </main>
  );
}
