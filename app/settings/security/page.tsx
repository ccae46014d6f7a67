import type { Metadata } from "next";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "@/lib/auth/credential-fields";
import { requireSessionUser } from "@/lib/auth/session-user";
import { signOutEverywhereAction } from "./actions";
import { ChangePasswordForm } from "./change-password-form";

export const metadata: Metadata = { title: "Security" };

/** The `?result=` values a done password change redirects with (app/settings/security/actions.ts), and their sentence. */
const CHANGED_MESSAGES = {
  changed: "Password changed. Every other session was signed out.",
  "changed-tokens": "Password changed. Every other session was signed out and your API tokens were revoked.",
} as const;

/** The security page; after a done password change (`?result=changed|changed-tokens`) it says what happened. */
export default async function SecurityPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  await requireSessionUser();
  const result = (await searchParams).result;
  const changed = typeof result === "string" && Object.hasOwn(CHANGED_MESSAGES, result) ? result : null;
  return (
    <main className="settings-page">
      <h1>Security</h1>
      <section className="card" aria-labelledby="password-heading">
        <h2 id="password-heading">Change password</h2>
        {changed && (
          <p role="status" className="form-notice">
            {CHANGED_MESSAGES[changed as keyof typeof CHANGED_MESSAGES]}
          </p>
        )}
        <ChangePasswordForm passwordMin={PASSWORD_MIN_LENGTH} passwordMax={PASSWORD_MAX_LENGTH} />
      </section>
      <section className="card" aria-labelledby="everywhere-heading">
        <h2 id="everywhere-heading">Sign out everywhere</h2>
        <p>Ends every session of your account on every device, this one included.</p>
        <form action={signOutEverywhereAction} className="auth-form">
          <label className="checkbox">
            <input type="checkbox" name="keepApiTokens" /> Keep my API tokens working
          </label>
          <button type="submit">Sign out everywhere</button>
        </form>
      </section>
    </main>
  );
}
