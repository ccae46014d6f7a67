/**
 * Why a session ended (docs/decisions/056): a password change records the user's other sessions as ended by it, so the
 * sign-in page of a browser still holding one can say why; a session that ended otherwise (signed out) has no reason.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { pool } from "../../lib/db";
import { auth } from "../../lib/auth/auth";
import { changePassword } from "../../lib/auth/change-password";
import { getEndedSessionReason } from "../../lib/auth/get-ended-session-reason";
import { recordEndedSessions } from "../../lib/auth/record-ended-sessions";
import { sessionTokenHash } from "../../lib/auth/session-token-hash";
import { createUser } from "../../lib/users/create-user";

const PASSWORD = "correct horse battery staple";

/** Signs in through better-auth's server API and returns a `cookie` header carrying the new session. */
async function sessionCookieFor(email: string, password = PASSWORD): Promise<string> {
  const { headers } = await auth().api.signInEmail({ body: { email, password }, returnHeaders: true });
  const pair = headers.get("set-cookie")?.split(";")[0];
  if (!pair) throw new Error("sign-in set no cookie");
  return pair;
}

async function newUser(): Promise<{ email: string; userId: string }> {
  const email = `ended-${randomUUID()}@example.test`;
  const created = await createUser({ email, password: PASSWORD, role: "user" });
  if (created.kind !== "created") throw new Error("user not created");
  return { email, userId: created.userId };
}

describe("ended sessions", () => {
  it("a password change ends the other sessions with its reason; a signed-out one has none", async () => {
    const { email, userId } = await newUser();
    const here = await sessionCookieFor(email);
    const elsewhere = await sessionCookieFor(email);
    const signedOut = await sessionCookieFor(email);
    await auth().api.signOut({ headers: new Headers({ cookie: signedOut }) });

    const changed = await changePassword(
      { userId, email, currentPassword: PASSWORD, newPassword: "a new horse battery staple", keepApiTokens: true },
      new Headers({ cookie: here }),
    );
    expect(changed.kind).toBe("changed");
    expect(await auth().api.getSession({ headers: new Headers({ cookie: elsewhere }) })).toBeNull();
    expect(await getEndedSessionReason(new Headers({ cookie: elsewhere }))).toBe("password_changed");
    // Signed out before the change: its row was gone already, so the change did not end it.
    expect(await getEndedSessionReason(new Headers({ cookie: signedOut }))).toBeNull();
    expect(await getEndedSessionReason(new Headers())).toBeNull();
    expect(await getEndedSessionReason(new Headers({ cookie: "better-auth.session_token=%E0%A4%A" }))).toBeNull();
  });

  it("a refused change (wrong current password) records nothing", async () => {
    const { email, userId } = await newUser();
    const here = await sessionCookieFor(email);
    const elsewhere = await sessionCookieFor(email);
    const refused = await changePassword(
      {
        userId,
        email,
        currentPassword: "not the password",
        newPassword: "a new horse battery staple",
        keepApiTokens: true,
      },
      new Headers({ cookie: here }),
    );
    expect(refused.kind).toBe("wrong_password");
    expect(await getEndedSessionReason(new Headers({ cookie: elsewhere }))).toBeNull();
  });

  it("only hashes are stored, and rows older than a session's lifetime are deleted with the next write", async () => {
    const { userId } = await newUser();
    const [old, fresh] = [`old-${randomUUID()}`, `fresh-${randomUUID()}`];
    await recordEndedSessions({ userId, tokens: [old], reason: "password_changed" });
    const stored = await pool().query("SELECT token_hash FROM ended_sessions WHERE user_id = $1", [userId]);
    expect(stored.rows).toEqual([{ token_hash: sessionTokenHash(old) }]);
    // Test setup: the row is eight days old, past the seven-day session lifetime.
    await pool().query("UPDATE ended_sessions SET ended_at = now() - interval '8 days' WHERE user_id = $1", [userId]);
    await recordEndedSessions({ userId, tokens: [fresh], reason: "password_changed" });
    const left = await pool().query("SELECT token_hash FROM ended_sessions WHERE user_id = $1", [userId]);
    expect(left.rows).toEqual([{ token_hash: sessionTokenHash(fresh) }]);
  });
});
