/**
 * Staged races on a scratch database (the lock-order tests of transfers and their reversals): two funded users, and
 * statements released together from behind an advisory-lock gate once every one of them waits on a lock, seen in
 * pg_stat_activity, never after a sleep.
 */
import pg from "pg";
import { migrate } from "@/lib/migrate";
import { createScratchDatabase } from "./db";
import { waitForBlockedSessions } from "./wait";

/** A user of a scratch database (its id and email). */
export interface ScratchUser {
  readonly id: string;
  readonly email: string;
}

/**
 * A migrated scratch database named from `prefix` with users `user_a` and `user_b`, each with a wallet of 10,000 minor
 * units (USD), and an open `admin` client on it (the caller ends it).
 */
export async function scratchWithTwoUsers(prefix: string) {
  const url = await createScratchDatabase(prefix);
  await migrate(url);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const users: ScratchUser[] = [];
  for (const id of ["user_a", "user_b"]) {
    const email = `${id}@example.test`;
    await admin.query(`INSERT INTO "user" (id, name, email, role) VALUES ($1, $1, $2, 'user')`, [id, email]);
    await admin.query("INSERT INTO wallets (user_id, balance_minor, currency) VALUES ($1, 10000, 'USD')", [id]);
    users.push({ id, email });
  }
  return { url, admin, a: users[0]!, b: users[1]! };
}

/**
 * Runs each of `statements` on a session of its own to `url` (application_name `applicationName`) while `admin`
 * holds advisory lock `gateKey` (the gated functions take it shared), waits until all of them wait on a lock (the gate,
 * or another's row), then opens the gate. Returns how each settled, in order; the sessions are closed.
 *
 * @throws when they are not all blocked within waitForBlockedSessions' bound (10 s).
 */
export async function releaseBehindGate(
  staged: {
    readonly url: string;
    readonly admin: pg.Client;
    readonly gateKey: number;
    readonly applicationName: string;
  },
  statements: readonly ((session: pg.Client) => Promise<unknown>)[],
): Promise<PromiseSettledResult<unknown>[]> {
  const { url, admin, gateKey, applicationName } = staged;
  const sessions = statements.map(() => new pg.Client({ connectionString: url, application_name: applicationName }));
  try {
    await Promise.all(sessions.map((s) => s.connect()));
    await admin.query("SELECT pg_advisory_lock($1)", [gateKey]);
    const settled = Promise.allSettled(statements.map((run, i) => run(sessions[i]!)));
    await waitForBlockedSessions({ applicationNamePrefix: applicationName }, statements.length);
    await admin.query("SELECT pg_advisory_unlock($1)", [gateKey]);
    return await settled;
  } finally {
    await Promise.all(sessions.map((s) => s.end().catch(() => undefined)));
  }
}
