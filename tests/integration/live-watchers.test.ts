/**
 * Announcements only for watched users (decision 046, migration 20261206100000_live_watchers) against real
 * PostgreSQL. The trigger announces a top-up's change only when its user has a fresh row in `live_watchers`, and the
 * race that gate opens is closed by a lock: a registration waits out every transaction whose trigger found no
 * watcher, so the page's re-read after `ready` sees that transaction's change. The negative control is a copy of the
 * registration without the lock: the page re-reads the old state, and the change is never announced.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestUser, testPool } from "../helpers/db";
import { claimEntry, claimRequest, dedicatedClient, freshRefId } from "../helpers/ledger";
import { waitFor, waitForBlockedSessions } from "../helpers/wait";

/** The registration without its lock, for the negative control (dropped after the file). */
const UNLOCKED_REGISTER = "live_watchers_register_without_lock_control";

const clients: pg.Client[] = [];
let listener: pg.Client;
/** Every announcement heard on `ledger_changes` by this file's listener, as parsed payloads. */
const heard: { userId: string; refId: string; status: string }[] = [];

beforeAll(async () => {
  listener = await dedicatedClient("live-watchers-listener");
  clients.push(listener);
  listener.on("notification", (message) => {
    if (message.channel === "ledger_changes" && message.payload) heard.push(JSON.parse(message.payload));
  });
  await listener.query("LISTEN ledger_changes");
  await testPool().query(
    `CREATE FUNCTION ${UNLOCKED_REGISTER}(p_user_ids TEXT[], p_ttl_s INTEGER) RETURNS void LANGUAGE sql AS $$
       INSERT INTO live_watchers AS w (user_id, expires_at)
       SELECT DISTINCT u, now() + make_interval(secs => p_ttl_s) FROM unnest(p_user_ids) AS u
       ON CONFLICT (user_id) DO UPDATE SET expires_at = greatest(w.expires_at, EXCLUDED.expires_at)
     $$`,
  );
});

afterAll(async () => {
  await testPool().query(`DROP FUNCTION IF EXISTS ${UNLOCKED_REGISTER}(TEXT[], INTEGER)`);
  await Promise.all(clients.map((client) => client.end().catch(() => {})));
});

/** A user with an `initiated` top-up (announced or not, depending on who watches). */
async function userWithTopup(): Promise<{ userId: string; entryId: string; refId: string }> {
  const user = await createTestUser();
  const refId = freshRefId("watch");
  const claim = await claimEntry(claimRequest(user.id, { refId }));
  return { userId: user.id, entryId: String(claim.id), refId };
}

async function register(userId: string, fn = "live_watchers_register", db: pg.ClientBase | pg.Pool = testPool()) {
  await db.query(`SELECT ${fn}($1::text[], 300)`, [[userId]]);
}

/** Waits until the listener heard `refId` reach `status` (announcements travel through PostgreSQL). */
async function heardOf(refId: string, status: string): Promise<void> {
  await waitFor(
    () => heard,
    (events) => events.some((event) => event.refId === refId && event.status === status),
    { what: `the announcement of ${refId} ${status}`, timeoutMs: 10_000, intervalMs: 10 },
  );
}

/**
 * Moves `topup` to `processing` in a transaction left open on its own connection: its trigger has run (and decided
 * whether to announce), its commit is the caller's.
 */
async function changeHeldOpen(topup: { userId: string; entryId: string }, name: string): Promise<pg.Client> {
  const writer = await dedicatedClient(name);
  clients.push(writer);
  await writer.query("BEGIN");
  await writer.query("UPDATE ledger_entries SET status = 'processing' WHERE user_id = $1 AND id = $2", [
    topup.userId,
    topup.entryId,
  ]);
  return writer;
}

/**
 * Proves that nothing more about `refId` will arrive: a watched user's change, committed after everything before,
 * is heard, and announcements are delivered in commit order.
 */
async function barrier(): Promise<void> {
  const marker = await userWithTopup();
  await register(marker.userId);
  await testPool().query("UPDATE ledger_entries SET status = 'processing' WHERE user_id = $1 AND id = $2", [
    marker.userId,
    marker.entryId,
  ]);
  await heardOf(marker.refId, "processing");
}

describe("live watchers", () => {
  it("announces the changes of a watched user only; an expired row announces nothing", async () => {
    const [watched, unwatched, lapsed] = [await userWithTopup(), await userWithTopup(), await userWithTopup()];
    await register(watched.userId);
    await register(lapsed.userId);
    await testPool().query("UPDATE live_watchers SET expires_at = now() - interval '1 second' WHERE user_id = $1", [
      lapsed.userId,
    ]);
    for (const { userId, entryId } of [unwatched, lapsed, watched]) {
      await testPool().query("UPDATE ledger_entries SET status = 'processing' WHERE user_id = $1 AND id = $2", [
        userId,
        entryId,
      ]);
    }
    await heardOf(watched.refId, "processing");
    await barrier();
    const refIds = new Set(heard.map((event) => event.refId));
    expect(refIds.has(unwatched.refId)).toBe(false);
    expect(refIds.has(lapsed.refId)).toBe(false);
  });

  it("an id with no user is skipped, and the others in the same registration are registered", async () => {
    const user = await createTestUser();
    await testPool().query("SELECT live_watchers_register($1::text[], 300)", [[`no-such-user-${user.id}`, user.id]]);
    const rows = await testPool().query<{ user_id: string }>(
      "SELECT user_id FROM live_watchers WHERE user_id IN ($1, $2)",
      [`no-such-user-${user.id}`, user.id],
    );
    expect(rows.rows).toEqual([{ user_id: user.id }]);
  });

  it("a registration waits for a change whose trigger found no watcher, so the re-read after it sees the change", async () => {
    const topup = await userWithTopup();
    const writer = await changeHeldOpen(topup, "live-watchers-writer");
    const writerPid = (await writer.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    // The page's registration queues behind it.
    const registration = register(topup.userId);
    await waitForBlockedSessions({ blockedBy: writerPid });
    await writer.query("COMMIT");
    await registration;
    // What the page reads once it hears `ready`.
    const reread = await testPool().query<{ status: string }>(
      "SELECT status FROM ledger_entries WHERE user_id = $1 AND id = $2",
      [topup.userId, topup.entryId],
    );
    expect(reread.rows[0]?.status).toBe("processing");
  });

  it("a change that comes while a registration is under way waits for it, then is announced", async () => {
    const topup = await userWithTopup();
    const page = await dedicatedClient("live-watchers-page");
    clients.push(page);
    await page.query("BEGIN");
    await register(topup.userId, "live_watchers_register", page);
    const pagePid = (await page.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    const change = testPool().query("UPDATE ledger_entries SET status = 'processing' WHERE user_id = $1 AND id = $2", [
      topup.userId,
      topup.entryId,
    ]);
    await waitForBlockedSessions({ blockedBy: pagePid });
    await page.query("COMMIT");
    await change;
    await heardOf(topup.refId, "processing");
  });

  it("negative control: registered without the lock, the page re-reads the old state and the change is never announced", async () => {
    const topup = await userWithTopup();
    const writer = await changeHeldOpen(topup, "live-watchers-writer-control");
    // Does not wait: the writer's trigger already decided there was nobody to tell.
    await register(topup.userId, UNLOCKED_REGISTER);
    const reread = await testPool().query<{ status: string }>(
      "SELECT status FROM ledger_entries WHERE user_id = $1 AND id = $2",
      [topup.userId, topup.entryId],
    );
    await writer.query("COMMIT");
    await barrier();
    expect(reread.rows[0]?.status).toBe("initiated");
    expect(heard.some((event) => event.refId === topup.refId)).toBe(false);
  });
});
