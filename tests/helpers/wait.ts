/**
 * The one way a test waits for what another process, session or server does: bounded polling with a message that
 * says what never happened. Races themselves are staged, not waited out: see {@link waitForBlockedSessions}.
 */
import { testPool } from "./db";

export interface WaitOptions {
  /** What is awaited, for the timeout message: "the charge of m-1 to succeed". */
  what: string;
  /** Longest wait in ms. Default 10 s. */
  timeoutMs?: number;
  /** Pause between two reads in ms. Default 20. */
  intervalMs?: number;
}

/**
 * Calls `read` until `accept` holds for its value, pausing `intervalMs` between calls, and returns that value.
 *
 * @throws Error "timed out after N ms waiting for <what>; last value: <JSON>" once `timeoutMs` has passed (the
 *   last read still counts); an error thrown by `read` or `accept` ends the wait at once.
 */
export async function waitFor<T>(
  read: () => Promise<T> | T,
  accept: (value: T) => boolean,
  options: WaitOptions,
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what}; last value: ${describe(value)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 20));
  }
}

function describe(value: unknown): string {
  try {
    return String(JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v))).slice(0, 500);
  } catch {
    return String(value).slice(0, 500);
  }
}

/** Which sessions {@link waitForBlockedSessions} counts. */
export type BlockedSessionFilter =
  /** Blocked by backend `blockedBy` (pg_blocking_pids), directly or queued behind another of its waiters. */
  | { blockedBy: number }
  /** In a lock wait, with an application_name that starts with this. */
  | { applicationNamePrefix: string }
  /** In a lock wait, running a statement that starts with this (leading blanks aside). */
  | { queryPrefix: string };

/** Counts the sessions a filter matches, in one query on the test pool. */
async function countBlockedSessions(filter: BlockedSessionFilter): Promise<number> {
  if ("blockedBy" in filter) {
    // A second waiter for a row lock queues behind the first waiter, not behind the holder: follow the chain.
    const result = await testPool().query<{ n: number }>(
      `WITH RECURSIVE waits AS (
         SELECT pid, pg_blocking_pids(pid) AS blockers FROM pg_stat_activity
       ), behind (pid) AS (
         SELECT pid FROM waits WHERE $1::int = ANY (blockers)
         UNION
         SELECT w.pid FROM waits w JOIN behind b ON b.pid = ANY (w.blockers)
       )
       SELECT count(*)::int AS n FROM behind`,
      [filter.blockedBy],
    );
    return result.rows[0]?.n ?? 0;
  }
  const [column, prefix] =
    "applicationNamePrefix" in filter
      ? ["application_name", filter.applicationNamePrefix]
      : [`ltrim(query, E' \\n')`, filter.queryPrefix];
  const result = await testPool().query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND ${column} LIKE $1`,
    [`${prefix}%`],
  );
  return result.rows[0]?.n ?? 0;
}

/**
 * Resolves once at least `count` sessions matching `filter` are blocked on a lock, polling pg_stat_activity every
 * 5 ms: how a test knows its staged race is in place (a transaction held open, the others queued behind it)
 * without sleeping. `blockedBy` is exact; the name and query filters may also see another file's sessions.
 *
 * @throws Error naming the filter and the count seen after `timeoutMs` (default 10 s).
 */
export async function waitForBlockedSessions(
  filter: BlockedSessionFilter,
  count = 1,
  timeoutMs = 10_000,
): Promise<void> {
  await waitFor(
    () => countBlockedSessions(filter),
    (n) => n >= count,
    { what: `${count} session(s) blocked (${JSON.stringify(filter)})`, timeoutMs, intervalMs: 5 },
  );
}
