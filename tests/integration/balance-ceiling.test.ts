/**
 * C15: no charge without room for its credit (contract section 5; MAX_BALANCE_MINOR, section 9). A top-up passes
 * the headroom gate (lib/topups/admit-topup.ts) before the bank is called; a reward is refused the same way; a
 * payment (a debit) never is. Real PostgreSQL and Redis; the reconciler's re-drive against a real sandbox bank.
 * Races are staged: a session holds the wallet row's lock while the competitors queue behind it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { env } from "@/lib/env";
import type { LedgerEntry } from "@/lib/ledger/entry";
import type { Queryable } from "@/lib/ledger/queryable";
import { markProcessing } from "@/lib/ledger/transitions";
import { admitTopupUnderWalletLock, claimAndAdmitTopup } from "@/lib/ledger/topup-admission";
import { createPayment } from "@/lib/payments/create-payment";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { ensureRedisConnected, redis } from "@/lib/redis";
import { capCounterKey } from "@/lib/rewards/cap-store";
import { creditReward } from "@/lib/rewards/credit-reward";
import { admitTopup, topupCeiling } from "@/lib/topups/admit-topup";
import { createTestUser, testPool } from "../helpers/db";
import { functionDefinition } from "../helpers/function-files";
import {
  balanceOf,
  claimEntry,
  claimRequest,
  dedicatedClient,
  freshRefId,
  seedBalance,
  transitionsOf,
} from "../helpers/ledger";
import { creditedRewardsMinor } from "../helpers/rewards";
import {
  backendPid,
  bankChargeOf,
  passOptions,
  startTestBank,
  storedResponseOf,
  stuckTopup,
  type TestBank,
} from "./reconciler-fixtures";
import { waitForBlockedSessions } from "../helpers/wait";
import { rewardDay } from "@/lib/rewards/reward-day";

const maxBalance = () => env().MAX_BALANCE_MINOR;

/** A claimed top-up row (`initiated`, lease held), as the request has it just before the gate. */
async function claimedTopup(userId: string, amountMinor: number): Promise<LedgerEntry> {
  return claimEntry(claimRequest(userId, { refId: freshRefId("c15"), amountMinor }));
}

function problemCode(body: string): unknown {
  return (JSON.parse(body) as { code?: unknown }).code;
}

/**
 * A copy of `caller` (ledger_admit_topup or ledger_claim_topup) named `name`, calling a copy of ledger_room_for_credit
 * whose sum of the pending credits runs before the wallet's lock (both from their files), for a race that other
 * sessions run: a negative control of "the sum is taken after the lock". Returns `name`; drop it with
 * {@link dropSumBeforeLockCopy}.
 */
async function sumBeforeLockCopy(caller: string, name: string): Promise<string> {
  const room = functionDefinition("ledger_room_for_credit");
  const lock = "  SELECT w.balance_minor INTO balance_minor FROM ledger_lock_wallet(p_user_id, p_currency) AS w;\n";
  const sum = "  pending_minor := ledger_pending_credits_minor(p_user_id, p_except_entry_id);\n";
  if (!room.includes(lock + sum)) throw new Error("the room's lock and sum are no longer found");
  await testPool().query(
    room.replace(lock + sum, sum + lock).replace("FUNCTION ledger_room_for_credit(", `FUNCTION ${name}_room(`),
  );
  const copy = functionDefinition(caller)
    .replace(`FUNCTION ${caller}(`, `FUNCTION ${name}(`)
    .replace("FROM ledger_room_for_credit(", `FROM ${name}_room(`);
  if (!copy.includes(`${name}_room(`)) throw new Error(`${caller} no longer calls ledger_room_for_credit`);
  await testPool().query(copy);
  return name;
}

async function dropSumBeforeLockCopy(name: string): Promise<void> {
  await testPool().query(`DROP FUNCTION IF EXISTS ${name}`);
  await testPool().query(`DROP FUNCTION IF EXISTS ${name}_room`);
}

describe("C15: the headroom gate in front of the bank", () => {
  it("C15: at the ceiling, a top-up of 1 fails as balance_limit_exceeded with a stored 422 and never reaches processing", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance());
    const entry = await claimedTopup(user.id, 1);
    const admission = await admitTopup(entry, entry.fencingToken, "request");
    expect(admission.kind).toBe("no_room");
    expect(admission.entry).toMatchObject({ status: "failed", failureReason: "balance_limit_exceeded" });
    const stored = await storedResponseOf(user.id, entry.id);
    expect(stored?.status).toBe(422);
    expect(problemCode(stored!.body)).toBe("balance_limit_exceeded");
    expect(admission.kind === "no_room" && admission.response).toEqual(stored);
    // Straight from initiated to failed: the row never said "the bank may have been called".
    expect((await transitionsOf(user.id, entry.id)).map((t) => t.to)).toEqual(["initiated", "failed"]);
    expect(await balanceOf(user.id)).toBe(maxBalance());
  });

  it("C15: exactly at the ceiling fits; one minor unit over does not", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 500);
    const over = await claimedTopup(user.id, 501);
    expect((await admitTopup(over, over.fencingToken, "request")).kind).toBe("no_room");
    const exact = await claimedTopup(user.id, 500);
    const admitted = await admitTopup(exact, exact.fencingToken, "request");
    expect(admitted.kind).toBe("admitted");
    expect(admitted.entry.status).toBe("processing");
  });

  it("C15: counts the user's other unfinished top-ups (never its own twice), not finished ones", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 1000);
    const other = await claimedTopup(user.id, 600);
    await markProcessing({ userId: user.id, entryId: other.id }, other.fencingToken);
    const tooMuch = await claimedTopup(user.id, 500);
    expect((await admitTopup(tooMuch, tooMuch.fencingToken, "request")).kind).toBe("no_room");
    // The refused row is finished: it no longer holds room. 600 + 400 = the 1000 left.
    const fits = await claimedTopup(user.id, 400);
    expect((await admitTopup(fits, fits.fencingToken, "request")).kind).toBe("admitted");
  });

  it("C15: a user with no wallet row yet is admitted (the row is created to be locked), and a fenced lease is not", async () => {
    const user = await createTestUser();
    const entry = await claimedTopup(user.id, 700);
    const fenced = await admitTopup(entry, entry.fencingToken + 1, "request");
    expect(fenced.kind).toBe("fenced");
    // The statement's own guard held (the outcome alone would also say fenced for a row moved under another attempt).
    expect(fenced.entry).toMatchObject({ status: "initiated", fencingToken: entry.fencingToken });
    expect((await transitionsOf(user.id, entry.id)).map((t) => t.to)).toEqual(["initiated"]);
    expect((await admitTopup(entry, entry.fencingToken, "request")).kind).toBe("admitted");
    // Run again (a retried transaction whose first run committed): its own result, not a refusal.
    expect((await admitTopup(entry, entry.fencingToken, "request")).kind).toBe("admitted");
    expect(await balanceOf(user.id)).toBe(0);
  });

  it("C15: two concurrent top-ups that each fit but not together: exactly one is admitted (staged on the wallet lock)", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 1000);
    const first = await claimedTopup(user.id, 600);
    const second = await claimedTopup(user.id, 600);
    const holder = await dedicatedClient("c15-wallet-holder");
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [user.id]);
      const racing = [first, second].map((entry) => admitTopup(entry, entry.fencingToken, "request"));
      await waitForBlockedSessions({ blockedBy: await backendPid(holder) }, 2, 10_000);
      await holder.query("COMMIT");
      const kinds = (await Promise.all(racing)).map((outcome) => outcome.kind).sort();
      expect(kinds).toEqual(["admitted", "no_room"]);
    } finally {
      await holder.end();
    }
  });

  it("C15: the request's claim and admission in one statement: at the ceiling born failed with its 422, with room processing; a second claim of the key gets nothing", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 500);
    const claimAndAdmit = (refId: string, amountMinor: number) =>
      claimAndAdmitTopup(testPool(), claimRequest(user.id, { refId, amountMinor }), topupCeiling(amountMinor, "USD"));
    const over = await claimAndAdmit(freshRefId("c15"), 501);
    expect(over).toMatchObject({ status: "failed", failureReason: "balance_limit_exceeded", leaseOwner: null });
    expect(over?.response?.status).toBe(422);
    expect(problemCode(over!.response!.body)).toBe("balance_limit_exceeded");
    expect((await transitionsOf(user.id, over!.id)).map((t) => t.to)).toEqual(["initiated", "failed"]);
    const refId = freshRefId("c15");
    const fits = await claimAndAdmit(refId, 500);
    expect(fits).toMatchObject({ status: "processing", fencingToken: 1, response: null });
    expect((await transitionsOf(user.id, fits!.id)).map((t) => t.to)).toEqual(["initiated", "processing"]);
    expect(await claimAndAdmit(refId, 500)).toBeNull();
    expect(await balanceOf(user.id)).toBe(maxBalance() - 500);
  });

  it("C15 negative control: the same staged race through a gate that ignores the other top-up admits both", async () => {
    // What the gate prevents: each request alone sees room for its 600 in the 1000 left.
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 1000);
    const first = await claimedTopup(user.id, 600);
    const second = await claimedTopup(user.id, 600);
    const balance = await balanceOf(user.id);
    const noGate = async (entry: LedgerEntry) =>
      balance + entry.amountMinor <= maxBalance()
        ? (await markProcessing({ userId: user.id, entryId: entry.id }, entry.fencingToken)).kind
        : "no_room";
    const kinds = (await Promise.all([first, second].map(noGate))).sort();
    expect(kinds).toEqual(["moved", "moved"]);
  });
});

/**
 * The admission is one call of the PL/pgSQL function ledger_admit_topup (lib/ledger/topup-admission.ts). Each guard
 * of its text (prisma/functions/ledger_admit_topup.sql) is broken in a copy and shown to let through what the real
 * function refuses: in a rolled-back transaction (CREATE OR REPLACE is transactional), or, for the race, as a
 * function of its own that other sessions can call, dropped afterwards.
 */
describe("C15: the admission function's guards, each with its negative control", () => {
  function rewritten(definition: string, from: string, to: string): string {
    if (!definition.includes(from)) throw new Error(`the rewrite no longer matches the function's text: ${from}`);
    return definition.replace(from, to);
  }

  /**
   * Admits `entry` under `attempt` with function `name` (ledger_admit_topup, or a helper it calls) rewritten, in a
   * transaction that is rolled back.
   */
  async function admitThroughRewrite(
    entry: LedgerEntry,
    fencingToken: number,
    [name, from, to]: readonly [string, string, string],
  ) {
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      await client.query(rewritten(functionDefinition(name), from, to));
      return await admitTopupUnderWalletLock(client, admissionRequest(entry, fencingToken));
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  }

  function admissionRequest(entry: LedgerEntry, fencingToken: number) {
    return {
      ref: { userId: entry.userId, entryId: entry.id },
      amountMinor: entry.amountMinor,
      currency: entry.currency,
      fencingToken,
      actor: "request" as const,
      maxBalanceMinor: maxBalance(),
      refusal: { status: 422, body: "{}" },
    };
  }

  it("a unique violation of the claim index raised inside the claim's function is a lost claim; other errors are thrown", async () => {
    const user = await createTestUser();
    const request = claimRequest(user.id, { refId: freshRefId("c15"), amountMinor: 100 });
    const ceiling = topupCeiling(100, "USD");
    expect(await claimAndAdmitTopup(testPool(), request, ceiling)).toMatchObject({ status: "processing" });
    // ON CONFLICT makes a 23505 unexpected; the function without it raises one on the taken key (contract section 8).
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      const definition = functionDefinition("ledger_claim");
      await client.query(rewritten(definition, "ON CONFLICT (user_id, type, ref_id) DO NOTHING", ""));
      expect(await claimAndAdmitTopup(client, request, ceiling)).toBeNull();
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
    // A refused row (amount_minor > 0) is not a lost claim: the CHECK violation is thrown as it came.
    const invalid = claimRequest(user.id, { refId: freshRefId("c15"), amountMinor: -5 });
    await expect(claimAndAdmitTopup(testPool(), invalid, ceiling)).rejects.toMatchObject({ code: "23514" });
  });

  it("refuses what is not a top-up's claim, and an admission of a row that does not exist", async () => {
    const user = await createTestUser();
    const payment = claimRequest(user.id, { type: "payment", amountMinor: 100 });
    await expect(claimAndAdmitTopup(testPool(), payment, topupCeiling(100, "USD"))).rejects.toThrow(
      "a payment key is not a top-up",
    );
    const missing = { ...admissionRequest({ ...(await claimedTopup(user.id, 100)), id: -1 }, 1) };
    await expect(admitTopupUnderWalletLock(testPool(), missing)).rejects.toThrow(`${user.id}/-1 does not exist`);
  });

  const ATTEMPT_GUARD = ["ledger_move_entry", "AND (p_attempt IS NULL OR e.attempt = p_attempt)", ""] as const;
  const PENDING_CREDITS = [
    "ledger_room_for_credit",
    "pending_minor := ledger_pending_credits_minor(p_user_id, p_except_entry_id);",
    "pending_minor := 0;",
  ] as const;
  const OWN_ENTRY_EXCLUDED = ["ledger_admit_topup", ", p_except_entry_id => p_entry_id", ""] as const;

  it("negative control: without the fencing token in the move, a stale attempt moves the row to processing", async () => {
    const user = await createTestUser();
    const entry = await claimedTopup(user.id, 700);
    const moved = await admitThroughRewrite(entry, entry.fencingToken + 1, ATTEMPT_GUARD);
    expect(moved.status).toBe("processing");
    // The real function, same call: nothing moves.
    expect((await admitTopup(entry, entry.fencingToken + 1, "request")).entry.status).toBe("initiated");
  });

  it("negative control: without the other unfinished top-ups in the sum, a top-up that does not fit is admitted", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 1000);
    const other = await claimedTopup(user.id, 600);
    expect((await admitTopup(other, other.fencingToken, "request")).kind).toBe("admitted");
    const tooMuch = await claimedTopup(user.id, 500);
    const admitted = await admitThroughRewrite(tooMuch, tooMuch.fencingToken, PENDING_CREDITS);
    expect(admitted.status).toBe("processing");
    expect((await admitTopup(tooMuch, tooMuch.fencingToken, "request")).kind).toBe("no_room");
  });

  it("negative control: with the top-up's own amount among the pending credits, one that fits exactly is refused", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 1000);
    const exact = await claimedTopup(user.id, 1000);
    expect((await admitThroughRewrite(exact, exact.fencingToken, OWN_ENTRY_EXCLUDED)).status).toBe("failed");
    expect((await admitTopup(exact, exact.fencingToken, "request")).kind).toBe("admitted");
  });

  it("negative control: the sum taken before the wallet lock refuses both racing top-ups, though one fits", async () => {
    // The staged race of the test above, through a copy whose sum runs before the lock. Each call's sum counts the
    // other's 600 as unfinished; the second to get the lock still counts the first's, which that one has just
    // failed, so both are refused where the real function admits one ("exactly one is admitted" above).
    const control = await sumBeforeLockCopy("ledger_admit_topup", "c15_control_admit_topup");
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 1000);
    const first = await claimedTopup(user.id, 600);
    const second = await claimedTopup(user.id, 600);
    const holder = await dedicatedClient("c15-control-holder");
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [user.id]);
      const racing = [first, second].map((entry) =>
        testPool().query<{ status: string }>(
          `SELECT status FROM ${control}($1, $2, $3, 'USD', $4, 'request', $5, 422::smallint, '{}')`,
          [user.id, entry.id, entry.amountMinor, entry.fencingToken, maxBalance()],
        ),
      );
      await waitForBlockedSessions({ blockedBy: await backendPid(holder) }, 2, 10_000);
      await holder.query("COMMIT");
      const statuses = (await Promise.all(racing)).map((result) => result.rows[0]?.status);
      expect(statuses).toEqual(["failed", "failed"]);
    } finally {
      await holder.end();
      await dropSumBeforeLockCopy(control);
    }
  });
});

describe("C15: rewards and payments near the ceiling", () => {
  it("C15: a reward at the ceiling is a stored 422 balance_limit_exceeded, replayed; nothing credited, the reservation released", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance());
    const now = new Date();
    const first = await creditReward({ userId: user.id, adId: "ad-c15", now });
    expect(first).toMatchObject({ kind: "response", replayed: false, response: { status: 422 } });
    const firstBody = first.kind === "response" ? first.response.body : "";
    expect(problemCode(firstBody)).toBe("balance_limit_exceeded");
    const again = await creditReward({ userId: user.id, adId: "ad-c15", now });
    expect(again).toEqual({ kind: "response", replayed: true, response: { status: 422, body: firstBody } });
    expect(await balanceOf(user.id)).toBe(maxBalance());
    const day = rewardDay(now, "UTC");
    expect(await creditedRewardsMinor(user.id, day)).toBe(0);
    // The reservation was released: the day's counter holds nothing for the refused reward.
    const client = redis();
    if (!client) throw new Error("REDIS_URL is not set");
    await ensureRedisConnected(client);
    expect(Number((await client.get(capCounterKey(user.id, day))) ?? 0)).toBe(0);
    // With room again (a payment made some), another ad is credited and counted.
    const paid = await createPayment({
      userId: user.id,
      orderId: freshRefId("c15-pay"),
      amountMinor: 100,
      currency: "USD",
    });
    expect(paid).toMatchObject({ kind: "response", response: { status: 201 } });
    const other = await creditReward({ userId: user.id, adId: "ad-c15-b", now });
    expect(other).toMatchObject({ kind: "response", response: { status: 201 } });
    expect(Number(await client.get(capCounterKey(user.id, day)))).toBe(5);
  });

  it("C15: a reward counts the user's unfinished top-ups as credited", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 100);
    const topup = await claimedTopup(user.id, 98);
    expect((await admitTopup(topup, topup.fencingToken, "request")).kind).toBe("admitted");
    const reward = await creditReward({ userId: user.id, adId: "ad-c15-pending" });
    expect(reward).toMatchObject({ kind: "response", response: { status: 422 } });
  });

  it("C15: a payment at the ceiling is never refused for it (a debit makes room)", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance());
    const paid = await createPayment({
      userId: user.id,
      orderId: freshRefId("c15-pay"),
      amountMinor: 250,
      currency: "USD",
    });
    expect(paid).toMatchObject({ kind: "response", response: { status: 201 } });
    expect(await balanceOf(user.id)).toBe(maxBalance() - 250);
  });
});

describe("C15: the reconciler's re-drive passes the same gate", () => {
  let bank: TestBank;
  beforeAll(async () => {
    bank = await startTestBank();
  }, 60_000);
  afterAll(async () => {
    await bank?.stop();
  });

  it("C15: an initiated row taken over at the ceiling fails with the stored 422 and the bank has no charge for it", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance());
    const stuck = await stuckTopup(user.id, { amountMinor: 1, processing: false });
    const pass = await reconcileOnce(passOptions(bank.url, [user.id]));
    expect(pass).toMatchObject({ examined: 1, failed: 1, redriven: 0 });
    const stored = await storedResponseOf(user.id, stuck.entry.id);
    expect(stored?.status).toBe(422);
    expect(problemCode(stored!.body)).toBe("balance_limit_exceeded");
    expect(await bankChargeOf(bank.url, stuck.merchantRef)).toBeNull();
  });

  it("C15: with room, the same re-drive charges and credits", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 1);
    const stuck = await stuckTopup(user.id, { amountMinor: 1, processing: false });
    const pass = await reconcileOnce(passOptions(bank.url, [user.id]));
    expect(pass).toMatchObject({ redriven: 1, completed: 1 });
    expect(await bankChargeOf(bank.url, stuck.merchantRef)).toMatchObject({ status: "succeeded" });
    expect(await balanceOf(user.id)).toBe(maxBalance());
  });
});

/**
 * The request's claim and admission are one call of the PL/pgSQL function ledger_claim_topup, which decides the
 * admission under the wallet's lock and then inserts the row already `processing` or already `failed`
 * (docs/decisions/045). Its guards, each with a copy of prisma/functions/ledger_claim_topup.sql that breaks it
 * (negative controls): the sum of the other unfinished top-ups, and the lock taken before that sum.
 */
describe("C15: the claim function's admission, each guard with its negative control", () => {
  /** Calls `fn` (ledger_claim_topup or a copy) for a fresh key of `userId`; returns the row's status, or null. */
  async function claimThrough(fn: string, userId: string, amountMinor: number, db: Queryable = testPool()) {
    const request = claimRequest(userId, { refId: freshRefId("c15"), amountMinor });
    const { rows } = await db.query<{ status: string; id: number }>(
      `SELECT status, id FROM ${fn}($1, $2, $3, 'USD', repeat('a', 64), '{}'::jsonb, 'w', 30000, 'request', $4, 422::smallint, '{}')`,
      [userId, request.key.refId, amountMinor, maxBalance()],
    );
    return rows[0] ?? null;
  }

  /** Two claims of 600 with 1000 of room, queued behind a held wallet lock and released together. */
  async function stagedRace(fn: string): Promise<{ userId: string; rows: ({ status: string; id: number } | null)[] }> {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 1000);
    const holder = await dedicatedClient("c15-claim-holder");
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [user.id]);
      const racing = [0, 1].map(() => claimThrough(fn, user.id, 600));
      await waitForBlockedSessions({ blockedBy: await backendPid(holder) }, 2, 10_000);
      await holder.query("COMMIT");
      return { userId: user.id, rows: await Promise.all(racing) };
    } finally {
      await holder.end();
    }
  }

  it("C15: two claims that fit one at a time, released together behind the wallet's lock: one born processing, the other born failed with the figures in its audit row", async () => {
    const { userId, rows } = await stagedRace("ledger_claim_topup");
    expect(rows.map((row) => row?.status).sort()).toEqual(["failed", "processing"]);
    const failed = rows.find((row) => row?.status === "failed")!;
    const audit = await testPool().query<{ from_status: string | null; to_status: string; detail: string | null }>(
      "SELECT from_status, to_status, detail FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id",
      [userId, failed.id],
    );
    expect(audit.rows).toEqual([
      { from_status: null, to_status: "initiated", detail: null },
      {
        from_status: "initiated",
        to_status: "failed",
        detail: `request: balance ${maxBalance() - 1000} + 600 + pending credits 600 > ${maxBalance()}`,
      },
    ]);
  });

  it("negative control: the sum taken before the wallet lock admits both racing claims, past the ceiling", async () => {
    const control = await sumBeforeLockCopy("ledger_claim_topup", "c15_control_claim_topup");
    try {
      const { rows } = await stagedRace(control);
      expect(rows.map((row) => row?.status)).toEqual(["processing", "processing"]);
    } finally {
      await dropSumBeforeLockCopy(control);
    }
  });

  it("negative control: without the unfinished top-ups in the sum, a claim that does not fit beside one is born processing", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, maxBalance() - 1000);
    expect((await claimThrough("ledger_claim_topup", user.id, 600))?.status).toBe("processing");
    expect((await claimThrough("ledger_claim_topup", user.id, 500))?.status).toBe("failed");
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      await client.query(
        functionDefinition("ledger_room_for_credit").replace(
          "pending_minor := ledger_pending_credits_minor(p_user_id, p_except_entry_id);",
          "pending_minor := 0;",
        ),
      );
      expect((await claimThrough("ledger_claim_topup", user.id, 500, client))?.status).toBe("processing");
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
});
