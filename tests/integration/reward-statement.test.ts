/**
 * A reward decided in one statement (lib/ledger/reward-statement.ts, ledger_decide_reward; docs/decisions/047),
 * against the real PostgreSQL: what it stores (the view of the row byte for byte, two audit rows, the credit, the
 * day's row), each refusal (a taken key, the day's cap, the ceiling with unfinished top-ups), and the races on the
 * wallet's lock, staged on pg_stat_activity. Negative controls run copies of the function with one guard removed, in
 * a scratch database, through the same scenarios.
 */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { operationKey, type OperationKey } from "../../lib/ledger";
import { decideRewardUnderWalletLock, type RewardDecision } from "../../lib/ledger/reward-statement";
import { jsonStoredResponse, rewardView, succeededRewardResponse } from "../../lib/ledger/views";
import { migrate } from "../../lib/migrate";
import { pool } from "../../lib/db";
import { createScratchDatabase, createTestUser, dropScratchDatabases, testPool } from "../helpers/db";
import { functionDefinition } from "../helpers/function-files";
import { balanceOf, dedicatedClient, freshRefId, seedBalance } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";

const DAY = "2026-03-01";
const AMOUNT_MINOR = 5;
const CAP_MINOR = 50;
const REFUSAL = jsonStoredResponse(422, { code: "balance_limit_exceeded" });

interface RewardCall {
  readonly key?: OperationKey;
  readonly capMinor?: number | null;
  readonly maxBalanceMinor?: number;
  readonly day?: string;
}

function rewardKey(userId: string): OperationKey {
  return operationKey(userId, "reward", `${freshRefId("ad")}:${DAY}`);
}

/** A reward of {@link AMOUNT_MINOR} for `userId` on `db` (the app's pool by default). */
function reward(userId: string, call: RewardCall = {}, db: pg.Pool | pg.Client = pool()): Promise<RewardDecision> {
  const key = call.key ?? rewardKey(userId);
  const day = call.day ?? DAY;
  const params = { adId: key.refId, day, amount: AMOUNT_MINOR, currency: "USD" };
  return decideRewardUnderWalletLock(db, {
    key,
    amountMinor: AMOUNT_MINOR,
    currency: "USD",
    params,
    day,
    capMinor: call.capMinor === undefined ? CAP_MINOR : call.capMinor,
    maxBalanceMinor: call.maxBalanceMinor ?? 1_000_000,
    succeeded: succeededRewardResponse(params, AMOUNT_MINOR, "USD"),
    refusal: REFUSAL,
  });
}

async function dayCredited(userId: string, db: pg.Pool | pg.Client = testPool()): Promise<number | null> {
  const result = await db.query<{ credited_minor: string }>(
    "SELECT credited_minor::text FROM reward_cap_days WHERE user_id = $1 AND day = $2",
    [userId, DAY],
  );
  return result.rows[0] ? Number(result.rows[0].credited_minor) : null;
}

async function setDayCredited(userId: string, creditedMinor: number, db: pg.Pool | pg.Client = testPool()) {
  await db.query(
    `INSERT INTO reward_cap_days (user_id, day, credited_minor) VALUES ($1, $2, $3)
     ON CONFLICT (user_id, day) DO UPDATE SET credited_minor = EXCLUDED.credited_minor`,
    [userId, DAY, creditedMinor],
  );
}

async function rewardRows(userId: string, db: pg.Pool | pg.Client = testPool()): Promise<number> {
  const result = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = $1 AND type = 'reward'",
    [userId],
  );
  return result.rows[0]?.n ?? 0;
}

async function auditOf(userId: string, entryId: number) {
  const result = await testPool().query(
    `SELECT from_status, to_status, actor, attempt, detail FROM ledger_transitions
      WHERE user_id = $1 AND entry_id = $2 ORDER BY id`,
    [userId, entryId],
  );
  return result.rows;
}

/** Holds the user's wallet row locked in an open transaction on its own connection, as any decision of theirs does. */
async function holdWallet(userId: string): Promise<{ pid: number; release: () => Promise<void> }> {
  const holder = await dedicatedClient("reward-holder");
  await holder.query("BEGIN");
  await holder.query("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [userId]);
  const pid = (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  return {
    pid,
    release: async () => {
      await holder.query("COMMIT");
      await holder.end();
    },
  };
}

describe("decideRewardUnderWalletLock", () => {
  it("credits once: the stored 201 is the row's view byte for byte, terminal with no lease, two audit rows, the day counted", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 100);
    const key = rewardKey(user.id);
    const decided = await reward(user.id, { key });
    if (decided.kind !== "decided") throw new Error(`expected a decision, got ${decided.kind}`);
    const row = decided.entry;
    expect(decided.response).toEqual({ status: 201, body: JSON.stringify({ reward: rewardView(row) }) });
    expect(row.response).toEqual(decided.response);
    expect(row).toMatchObject({ status: "succeeded", failureReason: null, leaseOwner: null, leaseExpiresAt: null });
    expect(row.fencingToken).toBe(1);
    expect(row.updatedAt).toEqual(row.createdAt);
    expect(decided.creditedTodayMinor).toBe(AMOUNT_MINOR);
    expect(await auditOf(user.id, row.id)).toEqual([
      { from_status: null, to_status: "initiated", actor: "request", attempt: 1, detail: null },
      { from_status: "initiated", to_status: "succeeded", actor: "request", attempt: 1, detail: null },
    ]);
    expect(await balanceOf(user.id)).toBe(105);
    expect(await dayCredited(user.id)).toBe(AMOUNT_MINOR);

    // The key again: nothing written, nothing counted.
    expect(await reward(user.id, { key })).toEqual({ kind: "lost" });
    expect(await balanceOf(user.id)).toBe(105);
    expect(await dayCredited(user.id)).toBe(AMOUNT_MINOR);
    expect(await rewardRows(user.id)).toBe(1);
  });

  it("the time written into the body is the row's to the millisecond, whatever its microseconds (20 rewards)", async () => {
    // A truncation where the column rounds would differ in about half of them.
    const user = await createTestUser();
    for (let i = 0; i < 20; i++) {
      const more = await reward(user.id, { capMinor: null });
      if (more.kind !== "decided") throw new Error(`expected a decision, got ${more.kind}`);
      expect(more.response.body).toBe(JSON.stringify({ reward: rewardView(more.entry) }));
    }
  });

  it("a user with no wallet row gets one, credited; the day's total is returned as it stands after the credit", async () => {
    const user = await createTestUser();
    await setDayCredited(user.id, 20);
    const decided = await reward(user.id);
    expect(decided).toMatchObject({ kind: "decided", creditedTodayMinor: 25, entry: { status: "succeeded" } });
    expect(await balanceOf(user.id)).toBe(AMOUNT_MINOR);
  });

  it("a credit repays an open debt first (contract section 12)", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 0);
    await testPool().query("UPDATE wallets SET debt_minor = 3 WHERE user_id = $1", [user.id]);
    expect(await reward(user.id)).toMatchObject({ kind: "decided", entry: { status: "succeeded" } });
    const wallet = await testPool().query(
      "SELECT balance_minor::int AS b, debt_minor::int AS d FROM wallets WHERE user_id = $1",
      [user.id],
    );
    expect(wallet.rows[0]).toEqual({ b: 2, d: 0 });
  });

  it("past the day's cap: over_cap, and nothing was written (no row, no audit, no credit, the day unchanged)", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 10);
    await setDayCredited(user.id, CAP_MINOR - AMOUNT_MINOR + 1);
    expect(await reward(user.id)).toEqual({ kind: "over_cap" });
    expect(await rewardRows(user.id)).toBe(0);
    const audit = await testPool().query("SELECT count(*)::int AS n FROM ledger_transitions WHERE user_id = $1", [
      user.id,
    ]);
    expect(audit.rows[0]).toEqual({ n: 0 });
    expect(await balanceOf(user.id)).toBe(10);
    expect(await dayCredited(user.id)).toBe(CAP_MINOR - AMOUNT_MINOR + 1);
    // Exactly at the cap fits.
    await setDayCredited(user.id, CAP_MINOR - AMOUNT_MINOR);
    expect(await reward(user.id)).toMatchObject({ kind: "decided", creditedTodayMinor: CAP_MINOR });
    // A first reward of the day larger than the cap is refused too (the insert's own guard).
    const fresh = await createTestUser();
    expect(await reward(fresh.id, { capMinor: AMOUNT_MINOR - 1 })).toEqual({ kind: "over_cap" });
    expect(await dayCredited(fresh.id)).toBeNull();
  });

  it("with no cap given the day's row is left alone and the reward credited", async () => {
    const user = await createTestUser();
    await setDayCredited(user.id, CAP_MINOR);
    expect(await reward(user.id, { capMinor: null })).toMatchObject({
      kind: "decided",
      creditedTodayMinor: null,
      entry: { status: "succeeded" },
    });
    expect(await dayCredited(user.id)).toBe(CAP_MINOR);
  });

  it("C15: without room (unfinished top-ups counted as credited) the row is born failed with the 422 and the figures; nothing counted or credited", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 90);
    await testPool().query(
      `INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status)
       VALUES ($1, 'topup', $2, 6, 'USD', repeat('a', 64), '{}', 'processing'),
              ($1, 'topup', $3, 500, 'USD', repeat('a', 64), '{}', 'succeeded')`,
      [user.id, freshRefId("t"), freshRefId("t")],
    );
    // 90 + 5 + 6 = 101 > 100; the finished top-up does not count.
    const refused = await reward(user.id, { maxBalanceMinor: 100 });
    if (refused.kind !== "decided") throw new Error(`expected a decision, got ${refused.kind}`);
    expect(refused.entry).toMatchObject({
      status: "failed",
      failureReason: "balance_limit_exceeded",
      response: REFUSAL,
    });
    expect(refused.response).toEqual(REFUSAL);
    expect(refused.creditedTodayMinor).toBeNull();
    expect(await auditOf(user.id, refused.entry.id)).toEqual([
      { from_status: null, to_status: "initiated", actor: "request", attempt: 1, detail: null },
      {
        from_status: "initiated",
        to_status: "failed",
        actor: "request",
        attempt: 1,
        detail: "request: balance 90 + 5 + pending credits 6 > 100",
      },
    ]);
    expect(await balanceOf(user.id)).toBe(90);
    expect(await dayCredited(user.id)).toBeNull();
    // Exactly at the ceiling fits.
    expect(await reward(user.id, { maxBalanceMinor: 101 })).toMatchObject({ entry: { status: "succeeded" } });
  });

  it("a unique violation of the claim index raised inside the function is a lost claim; another constraint's violation is thrown", async () => {
    const user = await createTestUser();
    const key = rewardKey(user.id);
    expect(await reward(user.id, { key })).toMatchObject({ kind: "decided" });
    // ON CONFLICT makes a 23505 unexpected; the function without it raises one on the taken key (contract section 8).
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      const definition = functionDefinition("ledger_claim");
      const guard = "ON CONFLICT (user_id, type, ref_id) DO NOTHING";
      expect(definition).toContain(guard);
      await client.query(definition.replace(guard, ""));
      expect(await reward(user.id, { key }, client as unknown as pg.Client)).toEqual({ kind: "lost" });
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
    // A check violation that is not the cap's (amount_minor > 0) is thrown as it came, not read as over_cap.
    const invalid = decideRewardUnderWalletLock(pool(), {
      key: rewardKey(user.id),
      amountMinor: -5,
      currency: "USD",
      params: { adId: "x", day: DAY, amount: -5, currency: "USD" },
      day: DAY,
      capMinor: CAP_MINOR,
      maxBalanceMinor: 1_000_000,
      succeeded: succeededRewardResponse({ adId: "x", day: DAY }, -5, "USD"),
      refusal: REFUSAL,
    });
    await expect(invalid).rejects.toMatchObject({ code: "23514" });
  });

  it("refuses a key that is not a reward's", async () => {
    const user = await createTestUser();
    await expect(reward(user.id, { key: operationKey(user.id, "payment", freshRefId("o")) })).rejects.toThrow(
      /not a reward/,
    );
  });

  it("two rewards that fit one at a time but not together, released at once behind the wallet's lock: one credited, one over_cap", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 0);
    await setDayCredited(user.id, CAP_MINOR - AMOUNT_MINOR);
    const holder = await holdWallet(user.id);
    const racing = [reward(user.id), reward(user.id)];
    await waitForBlockedSessions({ blockedBy: holder.pid }, 2);
    await holder.release();
    const outcomes = (await Promise.all(racing)).map((o) => o.kind).sort();
    expect(outcomes).toEqual(["decided", "over_cap"]);
    expect(await dayCredited(user.id)).toBe(CAP_MINOR);
    expect(await balanceOf(user.id)).toBe(AMOUNT_MINOR);
    expect(await rewardRows(user.id)).toBe(1);
  });

  it("C15: two rewards with room for one, released at once behind the wallet's lock: one credited, one born failed with its 422", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 95);
    const holder = await holdWallet(user.id);
    const racing = [reward(user.id, { maxBalanceMinor: 100 }), reward(user.id, { maxBalanceMinor: 100 })];
    await waitForBlockedSessions({ blockedBy: holder.pid }, 2);
    await holder.release();
    const statuses = (await Promise.all(racing)).map((o) => (o.kind === "decided" ? o.entry.status : o.kind)).sort();
    expect(statuses).toEqual(["failed", "succeeded"]);
    expect(await balanceOf(user.id)).toBe(100);
    expect(await dayCredited(user.id)).toBe(AMOUNT_MINOR);
  });

  it("C10: the same key released 10 times at once behind the wallet's lock: one decided, nine lost, one credit", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 0);
    const key = rewardKey(user.id);
    const holder = await holdWallet(user.id);
    const racing = Array.from({ length: 10 }, () => reward(user.id, { key }));
    await waitForBlockedSessions({ blockedBy: holder.pid }, 10);
    await holder.release();
    const outcomes = (await Promise.all(racing)).map((o) => o.kind);
    expect(outcomes.filter((k) => k === "decided")).toHaveLength(1);
    expect(outcomes.filter((k) => k === "lost")).toHaveLength(9);
    expect(await balanceOf(user.id)).toBe(AMOUNT_MINOR);
    expect(await dayCredited(user.id)).toBe(AMOUNT_MINOR);
  });
});

describe("negative controls: the function with one guard removed, in a scratch database", () => {
  let client: pg.Client | undefined;
  let scratchUrl: string | undefined;

  afterAll(async () => {
    await client?.end().catch(() => {});
    await dropScratchDatabases();
  });

  /**
   * The scratch database with function `name` (ledger_decide_reward, or a helper it calls) replaced by its file's text
   * with `broken` substituted for `guard`.
   */
  async function brokenCopy(guard: string, broken: string, name = "ledger_decide_reward"): Promise<pg.Client> {
    await client?.end().catch(() => {});
    const url = await createScratchDatabase("reward_statement");
    scratchUrl = url;
    await migrate(url);
    client = new pg.Client({ connectionString: url });
    await client.connect();
    const definition = functionDefinition(name);
    expect(definition, "the guard's text is in the function's file").toContain(guard);
    await client.query(definition.replace(guard, broken));
    return client;
  }

  async function scratchUser(db: pg.Client): Promise<string> {
    const id = `rs_${freshRefId("u").replaceAll("-", "")}`;
    await db.query(`INSERT INTO "user" (id, name, email) VALUES ($1, 'Reward statement', $1 || '@example.test')`, [id]);
    return id;
  }

  it("without the day's guard in the cap row's upsert, a reward past the cap is credited (the over_cap test would fail)", async () => {
    const db = await brokenCopy("WHERE d.credited_minor + EXCLUDED.credited_minor <= p_cap_minor", "");
    const userId = await scratchUser(db);
    await setDayCredited(userId, CAP_MINOR, db);
    expect(await reward(userId, {}, db)).toMatchObject({ kind: "decided", entry: { status: "succeeded" } });
    expect(await dayCredited(userId, db)).toBe(CAP_MINOR + AMOUNT_MINOR);
  });

  /** The C15 race on `db`: two rewards with room for one behind a held wallet lock; returns the final balance. */
  async function ceilingRace(db: pg.Client, url: string): Promise<{ statuses: string[]; balance: number }> {
    const userId = await scratchUser(db);
    await db.query("INSERT INTO wallets (user_id, balance_minor, currency) VALUES ($1, 95, 'USD')", [userId]);
    const holder = new pg.Client({ connectionString: url });
    const racers = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })];
    await Promise.all([holder, ...racers].map((c) => c.connect()));
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [userId]);
      const pid = (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      // Each racer's statement starts while the wallet is held; without the function's lock it reads the balance
      // past the holder and waits only at the credit's update (or behind the other racer's cap row).
      const racing = racers.map((c) => reward(userId, { maxBalanceMinor: 100 }, c));
      // pg_stat_activity is the server's: the scratch database's sessions are counted through the test pool.
      await waitForBlockedSessions({ blockedBy: pid }, 2);
      await holder.query("COMMIT");
      const statuses = (await Promise.all(racing)).map((o) => (o.kind === "decided" ? o.entry.status : o.kind));
      const balance = await db.query<{ b: string }>("SELECT balance_minor::text AS b FROM wallets WHERE user_id = $1", [
        userId,
      ]);
      return { statuses: statuses.sort(), balance: Number(balance.rows[0]!.b) };
    } finally {
      await Promise.all([holder, ...racers].map((c) => c.end().catch(() => {})));
    }
  }

  it("without the wallet's lock, two rewards with room for one are both credited past the ceiling (the C15 race test would fail)", async () => {
    const db = await brokenCopy(
      "SELECT w.balance_minor INTO balance_minor FROM ledger_lock_wallet(p_user_id, p_currency) AS w;",
      "SELECT w.balance_minor INTO balance_minor FROM wallets w WHERE w.user_id = p_user_id;",
      "ledger_room_for_credit",
    );
    const raced = await ceilingRace(db, scratchUrl!);
    expect(raced.statuses).toEqual(["succeeded", "succeeded"]);
    expect(raced.balance).toBe(105);
  });

  it("control of the control: the same race on the function as shipped credits one and refuses the other", async () => {
    const db = await brokenCopy("ledger_lock_wallet", "ledger_lock_wallet", "ledger_room_for_credit");
    const raced = await ceilingRace(db, scratchUrl!);
    expect(raced.statuses).toEqual(["failed", "succeeded"]);
    expect(raced.balance).toBe(100);
  });

  it("without the pending credits in the room's sum, a reward that does not fit is credited (the C15 test would fail)", async () => {
    const db = await brokenCopy(
      "pending_minor := ledger_pending_credits_minor(p_user_id, p_except_entry_id);",
      "pending_minor := 0;",
      "ledger_room_for_credit",
    );
    const userId = await scratchUser(db);
    await db.query("INSERT INTO wallets (user_id, balance_minor, currency) VALUES ($1, 90, 'USD')", [userId]);
    await db.query(
      `INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status)
       VALUES ($1, 'topup', 't-1', 6, 'USD', repeat('a', 64), '{}', 'processing')`,
      [userId],
    );
    expect(await reward(userId, { maxBalanceMinor: 100 }, db)).toMatchObject({ entry: { status: "succeeded" } });
  });
});
