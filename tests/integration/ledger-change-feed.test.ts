/**
 * The live status feed (docs/decisions/025-live-status-push.md) against real PostgreSQL: the trigger announces a
 * top-up's state changes when they commit, the feed hands each one to that user's subscribers only, and after
 * its connection is killed (a restart, a failover) it says `down`, listens again and says `ready`. The negative
 * control shows the loss is real: a feed that does not reconnect hears nothing after the kill.
 */
import { afterAll, describe, expect, it } from "vitest";
import { completeEntry, markProcessing } from "../../lib/ledger/transitions";
import { type FeedEvent, LISTENER_APPLICATION_NAME, LedgerChangeFeed } from "../../lib/live/ledger-change-feed";
import { createTestUser, testPool } from "../helpers/db";
import { claimEntry, claimRequest, freshRefId } from "../helpers/ledger";
import { testStack } from "../helpers/stack";
import { waitFor } from "../helpers/wait";

const feeds: LedgerChangeFeed[] = [];

afterAll(async () => {
  await Promise.all(feeds.map((feed) => feed.close()));
});

/** A feed on the test database, and what one subscriber of `userId` heard. */
function subscribed(userId: string, options: { reconnect?: boolean } = {}) {
  const feed = new LedgerChangeFeed({ connectionString: testStack().databaseUrl, ...options });
  feeds.push(feed);
  const heard: FeedEvent[] = [];
  feed.subscribe(userId, (event) => heard.push(event));
  return { feed, heard };
}

/** Waits until `predicate` holds on what was heard (the announcement travels through PostgreSQL). */
async function until(heard: FeedEvent[], predicate: (events: FeedEvent[]) => boolean, timeoutMs = 10_000) {
  await waitFor(() => heard, predicate, { what: "the announcement", timeoutMs, intervalMs: 25 });
}

function changes(heard: FeedEvent[]): string[] {
  return heard.flatMap((event) =>
    event.kind === "change" ? [`${event.change.type} ${event.change.refId} ${event.change.status}`] : [],
  );
}

const kinds = (heard: FeedEvent[]) => heard.map((event) => event.kind);

/** Claims a top-up, marks it processing and completes it: three announced states. */
async function topupThroughItsStates(userId: string, refId: string) {
  const claim = await claimEntry(claimRequest(userId, { refId }));
  const ref = { userId, entryId: claim.id };
  await markProcessing(ref, claim.fencingToken);
  await completeEntry(ref, { actor: "webhook", guard: { kind: "status_only" }, credit: true });
}

/** The listener's backend of `feed`'s process: any `wallet-live` session that LISTENs (one per feed here). */
async function listenerPids(): Promise<number[]> {
  const result = await testPool().query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
    [LISTENER_APPLICATION_NAME],
  );
  return result.rows.map((row) => row.pid);
}

describe("ledger change feed", () => {
  it("announces each committed state of a top-up to its user's subscriber, and nothing of others", async () => {
    const [user, other] = [await createTestUser(), await createTestUser()];
    const { heard } = subscribed(user.id);
    await until(heard, (events) => events.some((event) => event.kind === "ready"));
    const refId = freshRefId("live");
    await topupThroughItsStates(other.id, freshRefId("other"));
    await topupThroughItsStates(user.id, refId);
    await until(heard, (events) => changes(events).length >= 3);
    expect(changes(heard)).toEqual([
      `topup ${refId} initiated`,
      `topup ${refId} processing`,
      `topup ${refId} succeeded`,
    ]);
  });

  it("says ready once its user is registered as watched, and the row is fresh (decision 046)", async () => {
    const user = await createTestUser();
    const { heard } = subscribed(user.id);
    await until(heard, (events) => events.some((event) => event.kind === "ready"));
    const row = await testPool().query<{ fresh: boolean }>(
      "SELECT expires_at > now() + interval '4 minutes' AS fresh FROM live_watchers WHERE user_id = $1",
      [user.id],
    );
    expect(row.rows).toEqual([{ fresh: true }]);
  });

  it("announces nothing for a rolled-back change, nor for payments and rewards", async () => {
    const user = await createTestUser();
    const { heard } = subscribed(user.id);
    await until(heard, (events) => events.some((event) => event.kind === "ready"));
    const rolledBack = freshRefId("rollback");
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      await client.query(
        `INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params)
         VALUES ($1, 'topup', $2, 100, 'USD', repeat('a', 64), '{}')`,
        [user.id, rolledBack],
      );
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    expect(await claimEntry(claimRequest(user.id, { type: "payment" }))).toMatchObject({ type: "payment" });
    // A later top-up's announcement arrives after anything the statements above would have sent (NOTIFY is
    // delivered in commit order), so its arrival proves the others were never sent.
    const marker = freshRefId("marker");
    await claimEntry(claimRequest(user.id, { refId: marker }));
    await until(heard, (events) => changes(events).length >= 1);
    expect(changes(heard)).toEqual([`topup ${marker} initiated`]);
  });

  it("after its connection is killed: down, then it listens again, says ready, and hears the next change", async () => {
    const user = await createTestUser();
    const { feed, heard } = subscribed(user.id);
    await until(heard, (events) => events.some((event) => event.kind === "ready"));
    const before = await listenerPids();
    await testPool().query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", [before]);
    await until(heard, (events) => kinds(events).includes("down"));
    await until(heard, (events) => kinds(events).filter((kind) => kind === "ready").length >= 2);
    expect(feed.isListening).toBe(true);
    expect(kinds(heard).slice(0, 3)).toEqual(["ready", "down", "ready"]);
    const refId = freshRefId("after-kill");
    await claimEntry(claimRequest(user.id, { refId }));
    await until(heard, (events) => changes(events).length >= 1);
    expect(changes(heard)).toEqual([`topup ${refId} initiated`]);
  });

  it("negative control: without reconnecting, the killed listener hears nothing more", async () => {
    const user = await createTestUser();
    const { feed, heard } = subscribed(user.id, { reconnect: false });
    await until(heard, (events) => events.some((event) => event.kind === "ready"));
    await testPool().query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", [await listenerPids()]);
    await until(heard, (events) => kinds(events).includes("down"));
    // A listening subscriber on the same user proves the change was announced.
    const { heard: witness } = subscribed(user.id);
    await until(witness, (events) => events.some((event) => event.kind === "ready"));
    const refId = freshRefId("unheard");
    await claimEntry(claimRequest(user.id, { refId }));
    await until(witness, (events) => changes(events).length >= 1);
    expect(changes(heard)).toEqual([]);
    expect(feed.isListening).toBe(false);
  });
});
