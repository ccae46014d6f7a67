/**
 * Scenarios of case C29 (one poisoned row must not stop the reconciler's pass), shared by
 * tests/integration/reconciler-poisoned-row.test.ts (the real code) and its negative controls
 * (tests/integration/reconciler-poisoned-row-control.test.ts, the same scenarios with a guard removed). Each scenario
 * stages its fault deterministically and returns what happened; each `assert...` function is the assertion both
 * files run. Not a test file (no `.test.ts`).
 *
 * The faults:
 * - a row whose settlement the database refuses with an unexpected SQLSTATE: a BEFORE UPDATE trigger on
 *   ledger_entries, created here for that one row id, raises XX001 (data_corrupted) when the row's status or charge
 *   id would change (never on the take-over, a lease change or the failure count); dropped afterwards;
 * - a row whose credit waits behind its wallet's lock, held by a transaction in another connection until the pass
 *   ends; the scenario knows the reconciler is waiting on it from pg_stat_activity, not from a sleep;
 * - a dispute whose chargeback the database refuses: a BEFORE INSERT trigger raising XX001 for one user's
 *   `chargeback` rows.
 */
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import type pg from "pg";
import { POST } from "@/app/api/v1/admin/reconcile/route";
import { createApiTokenOrThrow } from "@/lib/api-tokens/create-api-token";
import { env } from "@/lib/env";
import type { LedgerEntry } from "@/lib/ledger/entry";
import { resetChargeCursors } from "@/lib/reconciler/charge-cursor";
import { reconcileOnce, type ReconcileResult } from "@/lib/reconciler/reconcile-once";
import { reconcileResultSchema } from "@/lib/reconciler/reconcile-result";
import { ROW_STATEMENT_TIMEOUT_MS } from "@/lib/reconciler/row-guard";
import { CHARGE_LOOK_BACK_MS_DEFAULT } from "@/lib/reconciler/charge-cursor";
import {
  resetDisputeCursors,
  type DisputePassOptions,
  type DisputePassResult,
} from "@/lib/chargebacks/reconcile-disputes";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf, dedicatedClient, freshRefId, seedBalance } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";
import { bankDisputeOf, ledgerOf } from "./chargeback-fixtures";
import {
  BANK_TIMEOUT_MS,
  backendPid,
  passOptions,
  stuckTopup,
  waitForChargeStatus,
  type StuckTopup,
} from "./reconciler-fixtures";

/** Users (one stuck top-up each) in a poisoned-row scenario: the poisoned one and two others. */
const USERS_PER_SCENARIO = 3;

/** Amount of each stuck top-up, minor units: distinct per scenario only for reading failures. */
const AMOUNT_MINOR = 640;

/** A BEFORE UPDATE trigger that makes every settlement of one ledger row fail with `sqlstate`. */
export interface Poison {
  /** Drops the trigger and its function. Safe to call twice. */
  drop(): Promise<void>;
}

/**
 * Poisons the row `entry`: from now on, any UPDATE that would change its status or charge id raises `sqlstate`
 * (default XX001, data_corrupted: an error the reconciler cannot expect). The take-over, lease changes and the
 * failure count still go through, so the pass reaches the row's settlement and counts its failure.
 */
export async function poisonRow(entry: LedgerEntry, sqlstate = "XX001"): Promise<Poison> {
  if (!Number.isSafeInteger(entry.id)) throw new Error(`poisonRow: unexpected id ${entry.id}`);
  return await poisonTrigger(
    "UPDATE",
    `OLD.user_id = '${checkedUserId(entry.userId)}' AND OLD.id = ${entry.id}
     AND (NEW.status IS DISTINCT FROM OLD.status OR NEW.bank_charge_id IS DISTINCT FROM OLD.bank_charge_id)`,
    sqlstate,
  );
}

/** Poisons every `chargeback` row claimed for `userId` from now on: its INSERT raises XX001. */
export async function poisonChargebacks(userId: string): Promise<Poison> {
  return await poisonTrigger("INSERT", `NEW.user_id = '${checkedUserId(userId)}' AND NEW.type = 'chargeback'`, "XX001");
}

/** Only ids this test made go into the DDL (it takes no parameters): checked to be what they look like. */
function checkedUserId(userId: string): string {
  if (!/^test_[0-9a-f]{32}$/.test(userId)) throw new Error(`not a test user id: ${userId}`);
  return userId;
}

/** A BEFORE `event` trigger on ledger_entries raising `sqlstate` for the rows matching `when` (SQL). */
async function poisonTrigger(event: "INSERT" | "UPDATE", when: string, sqlstate: string): Promise<Poison> {
  if (!/^[0-9A-Z]{5}$/.test(sqlstate)) throw new Error(`not a SQLSTATE: ${sqlstate}`);
  const name = `c29_poison_${randomUUID().replaceAll("-", "")}`;
  await testPool().query(`
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'c29 test: ledger entry % of % is poisoned', NEW.id, NEW.type USING ERRCODE = '${sqlstate}';
    END $$`);
  await testPool().query(`
    CREATE TRIGGER ${name} BEFORE ${event} ON ledger_entries FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION ${name}()`);
  let dropped = false;
  return {
    async drop() {
      if (dropped) return;
      dropped = true;
      await testPool().query(`DROP TRIGGER IF EXISTS ${name} ON ledger_entries`);
      await testPool().query(`DROP FUNCTION IF EXISTS ${name}()`);
    },
  };
}

/** A transaction in its own connection holding `FOR UPDATE` on a wallet row, until released. */
export interface WalletLock {
  /** The holder's backend pid (the sessions waiting on it name it in pg_blocking_pids). */
  readonly pid: number;
  /** Rolls back and closes the connection. Safe to call twice. */
  release(): Promise<void>;
}

/** Locks `userId`'s wallet row (created empty when missing) in a transaction left open. */
export async function holdWalletLock(userId: string): Promise<WalletLock> {
  await seedBalance(userId, 0);
  const client: pg.Client = await dedicatedClient("c29-wallet-lock");
  await client.query("BEGIN");
  await client.query("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [userId]);
  const pid = await backendPid(client);
  let released = false;
  return {
    pid,
    async release() {
      if (released) return;
      released = true;
      await client.query("ROLLBACK").catch(() => {});
      await client.end();
    },
  };
}

/** The failure count, last error and flag time of a row, as the database holds them. */
export async function settleFailuresOf(
  entry: LedgerEntry,
): Promise<{ failures: number; lastError: string | null; flagged: boolean; status: string }> {
  const result = await testPool().query<{
    settle_failures: number;
    settle_last_error: string | null;
    settle_flagged_at: Date | null;
    status: string;
  }>(
    "SELECT settle_failures, settle_last_error, settle_flagged_at, status FROM ledger_entries WHERE user_id = $1 AND id = $2",
    [entry.userId, entry.id],
  );
  const row = result.rows[0]!;
  return {
    failures: row.settle_failures,
    lastError: row.settle_last_error,
    flagged: row.settle_flagged_at !== null,
    status: row.status,
  };
}

/** Stuck top-ups (charged at `bankUrl`, succeeded there, lease expired) of {@link USERS_PER_SCENARIO} new users. */
export async function stuckTopupsOfNewUsers(bankUrl: string): Promise<StuckTopup[]> {
  const rows: StuckTopup[] = [];
  for (let i = 0; i < USERS_PER_SCENARIO; i++) {
    const user = await createTestUser();
    const row = await stuckTopup(user.id, { amountMinor: AMOUNT_MINOR, chargeAt: bankUrl });
    await waitForChargeStatus(bankUrl, row.merchantRef, "succeeded");
    rows.push(row);
  }
  // The first row's lease expired longest ago: the take-over (oldest expiry first) reaches it before the others.
  await testPool().query(
    "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 minute' WHERE user_id = $1 AND id = $2",
    [rows[0]!.ref.userId, rows[0]!.ref.entryId],
  );
  return rows;
}

/** What a pass over one poisoned row and the others did. */
export interface PoisonedPassOutcome {
  /** The pass's result, or null when the pass threw. */
  readonly result: ReconcileResult | null;
  /** The error the pass threw, if it did. */
  readonly thrown: unknown;
  readonly poisoned: StuckTopup;
  /** The other rows' users credited by the pass. */
  readonly othersCredited: number;
  readonly poisonedRow: Awaited<ReturnType<typeof settleFailuresOf>>;
}

/**
 * One pass over {@link USERS_PER_SCENARIO} users' stuck top-ups, the first one poisoned (XX001 on its settlement, and
 * reached first). Returns what the pass reported, or what it threw, and what the ledger holds afterwards.
 */
export async function passWithPoisonedRow(bankUrl: string): Promise<PoisonedPassOutcome> {
  const rows = await stuckTopupsOfNewUsers(bankUrl);
  const poisoned = rows[0]!;
  const poison = await poisonRow(poisoned.entry);
  try {
    resetChargeCursors();
    let result: ReconcileResult | null = null;
    let thrown: unknown = null;
    try {
      result = await reconcileOnce(
        passOptions(
          bankUrl,
          rows.map((r) => r.ref.userId),
        ),
      );
    } catch (error) {
      thrown = error;
    }
    return {
      result,
      thrown,
      poisoned,
      othersCredited: await countCredited(rows.slice(1)),
      poisonedRow: await settleFailuresOf(poisoned.entry),
    };
  } finally {
    await poison.drop();
  }
}

async function countCredited(rows: readonly StuckTopup[]): Promise<number> {
  let credited = 0;
  for (const row of rows) if ((await balanceOf(row.ref.userId)) === AMOUNT_MINOR) credited += 1;
  return credited;
}

/**
 * The C29 assertions for a poisoned row: the pass finished (no exception), credited every other row, counted and
 * named the poisoned one (`row_error` with its merchant reference and charge id, `errored: 1`), and left it
 * unfinished with one failure recorded on it.
 */
export function assertOthersFinished(outcome: PoisonedPassOutcome): void {
  expect(outcome.thrown).toBeNull();
  expect(outcome.othersCredited).toBe(USERS_PER_SCENARIO - 1);
  expect(outcome.result).toMatchObject({ completed: USERS_PER_SCENARIO - 1, errored: 1 });
  expect(outcome.result?.databaseUnreachable).toBeUndefined();
  expect(outcome.result?.anomalies).toEqual([
    {
      kind: "row_error",
      merchantRef: outcome.poisoned.merchantRef,
      chargeId: expect.stringMatching(/^ch_/),
      detail: expect.stringMatching(/XX001.*poisoned.*failure 1 of \d+ on this row/),
    },
  ]);
  expect(outcome.poisonedRow).toMatchObject({ failures: 1, flagged: false, status: "processing" });
  expect(outcome.poisonedRow.lastError).toContain("poisoned");
}

/** What a pass did while one user's wallet stayed locked in another connection. */
export interface LockedWalletOutcome {
  /** The pass's result, or null when it had not finished within the deadline while the wallet was still locked. */
  readonly result: ReconcileResult | null;
  /** From the moment the reconciler was seen waiting on the lock to the end of the pass, ms (null: not finished). */
  readonly finishedAfterMs: number | null;
  readonly locked: StuckTopup;
  readonly othersCredited: number;
  readonly lockedRow: Awaited<ReturnType<typeof settleFailuresOf>>;
}

/**
 * How long, after the reconciler is seen waiting on the held wallet lock, the pass may take to finish with the lock
 * still held: the row's own bound (ROW_STATEMENT_TIMEOUT_MS, 2 s) plus 3 s for the other rows, the charge list and
 * a loaded 2-core machine. Without the row's bound the wait is the session's DB_STATEMENT_TIMEOUT_MS (15 s).
 */
export const LOCKED_PASS_DEADLINE_MS = ROW_STATEMENT_TIMEOUT_MS + 3000;

/**
 * One pass over {@link USERS_PER_SCENARIO} users' stuck top-ups while the first user's wallet row is locked by a
 * transaction left open in another connection. The lock is held until the pass ends, or until
 * {@link LOCKED_PASS_DEADLINE_MS} after the reconciler was seen waiting on it (then released, and the pass awaited).
 */
export async function passBehindLockedWallet(bankUrl: string): Promise<LockedWalletOutcome> {
  const rows = await stuckTopupsOfNewUsers(bankUrl);
  const locked = rows[0]!;
  const lock = await holdWalletLock(locked.ref.userId);
  try {
    resetChargeCursors();
    const pass = reconcileOnce(
      passOptions(
        bankUrl,
        rows.map((r) => r.ref.userId),
      ),
    );
    // The reconciler's credit of the first row waits on the lock: seen in pg_stat_activity, not guessed.
    await waitForBlockedSessions({ blockedBy: lock.pid });
    const seenWaitingAt = performance.now();
    let deadline: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"deadline">((resolve) => {
      deadline = setTimeout(() => resolve("deadline"), LOCKED_PASS_DEADLINE_MS);
    });
    const first = await Promise.race([pass, timedOut]);
    clearTimeout(deadline);
    const finishedAfterMs = first === "deadline" ? null : Math.round(performance.now() - seenWaitingAt);
    await lock.release();
    const result = await pass;
    return {
      result: first === "deadline" ? null : result,
      finishedAfterMs,
      locked,
      othersCredited: await countCredited(rows.slice(1)),
      lockedRow: await settleFailuresOf(locked.entry),
    };
  } finally {
    await lock.release();
  }
}

/**
 * The C29 assertions for a locked wallet: the pass finished while the wallet was still locked, within the row's
 * bound (not the session's), credited every other row, and counted the locked one as one failure: a statement
 * timeout (57014), named by its merchant reference and charge id.
 */
export function assertRowWaitBounded(outcome: LockedWalletOutcome): void {
  expect(outcome.finishedAfterMs, "the pass did not finish while the wallet stayed locked").not.toBeNull();
  expect(outcome.finishedAfterMs!).toBeLessThan(LOCKED_PASS_DEADLINE_MS);
  expect(outcome.othersCredited).toBe(USERS_PER_SCENARIO - 1);
  expect(outcome.result).toMatchObject({ completed: USERS_PER_SCENARIO - 1, errored: 1 });
  expect(outcome.result?.anomalies).toEqual([
    {
      kind: "row_error",
      merchantRef: outcome.locked.merchantRef,
      chargeId: expect.stringMatching(/^ch_/),
      detail: expect.stringContaining("57014"),
    },
  ]);
  expect(outcome.lockedRow).toMatchObject({ failures: 1, flagged: false, status: "processing" });
}

/** What `POST /api/v1/admin/reconcile` answered for a user with a poisoned row among others. */
export interface AdminPassOutcome {
  readonly status: number;
  readonly body: unknown;
  readonly poisoned: StuckTopup;
  readonly others: readonly StuckTopup[];
}

/**
 * Calls the real `POST /api/v1/admin/reconcile?userId=` handler in process (route file, wrapper, bearer token of an
 * admin), for one user with {@link USERS_PER_SCENARIO} stuck top-ups, the first of them poisoned. The pass asks the
 * bank at BANK_URL (the caller sets it before lib/env.ts is first read).
 */
export async function adminReconcileWithPoisonedRow(bankUrl: string): Promise<AdminPassOutcome> {
  const user = await createTestUser();
  const rows: StuckTopup[] = [];
  for (let i = 0; i < USERS_PER_SCENARIO; i++) {
    const row = await stuckTopup(user.id, { amountMinor: AMOUNT_MINOR, chargeAt: bankUrl });
    await waitForChargeStatus(bankUrl, row.merchantRef, "succeeded");
    rows.push(row);
  }
  await testPool().query(
    "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 minute' WHERE user_id = $1 AND id = $2",
    [user.id, rows[0]!.ref.entryId],
  );
  const admin = await createTestUser({ role: "admin" });
  const { token } = await createApiTokenOrThrow({ userId: admin.id, name: "c29" });
  const poison = await poisonRow(rows[0]!.entry);
  try {
    resetChargeCursors();
    const url = new URL(`/api/v1/admin/reconcile?userId=${encodeURIComponent(user.id)}`, env().APP_URL);
    const response = await POST(new Request(url, { method: "POST", headers: { authorization: `Bearer ${token}` } }), {
      params: Promise.resolve({}),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: response.status, body, poisoned: rows[0]!, others: rows.slice(1) };
  } finally {
    await poison.drop();
  }
}

/**
 * The C29 assertions for the admin endpoint: 200 with partial results in the OpenAPI document's shape
 * (`ReconcileResult`, strict): the other rows completed, the poisoned one counted in `errored` and named in a
 * `row_error` anomaly.
 */
export function assertAdminPartialResults(outcome: AdminPassOutcome): void {
  expect(outcome.status, JSON.stringify(outcome.body)).toBe(200);
  const result = reconcileResultSchema.parse(outcome.body);
  expect(result).toMatchObject({ completed: outcome.others.length, errored: 1 });
  expect(result.anomalies?.map((a) => [a.kind, a.merchantRef])).toEqual([["row_error", outcome.poisoned.merchantRef]]);
}

/** What the dispute step did with two users' lost disputes, the first one's chargeback poisoned. */
export interface PoisonedDisputeOutcome {
  /** The full pass that credited both top-ups (both chargebacks poisoned then). */
  readonly setupPass: ReconcileResult;
  /** The dispute step's result, or null when it threw. */
  readonly result: DisputePassResult | null;
  readonly thrown: unknown;
  readonly poisoned: StuckTopup;
  readonly other: StuckTopup;
  readonly poisonedLedger: Awaited<ReturnType<typeof ledgerOf>>;
  readonly otherLedger: Awaited<ReturnType<typeof ledgerOf>>;
}

/** A dispute step: lib/chargebacks/reconcile-disputes.ts `reconcileDisputes`, or a copy of it. */
export type DisputeStep = (options: DisputePassOptions) => Promise<DisputePassResult>;

/**
 * Two users, each with a stuck top-up whose charge the sandbox disputes and loses (`sbx-dispute-`), the first user's
 * dispute lost before the second's charge exists (so the bank lists it first). A pass credits both top-ups while both
 * users' chargebacks are poisoned; then only the first user's stays poisoned, and `step` runs over both disputes from
 * a fresh cursor. Returns the setup pass, what the step returned or threw, and both users' chargebacks.
 */
export async function disputeStepWithPoisonedChargeback(
  bankUrl: string,
  step: DisputeStep,
): Promise<PoisonedDisputeOutcome> {
  const disputedTopup = async () => {
    const user = await createTestUser();
    const row = await stuckTopup(user.id, {
      amountMinor: 450,
      refId: freshRefId("sbx-dispute-c29"),
      chargeAt: bankUrl,
    });
    await bankDisputeOf(bankUrl, row.merchantRef, "lost");
    return row;
  };
  const poisoned = await disputedTopup();
  const other = await disputedTopup();
  const userIds = [poisoned.ref.userId, other.ref.userId];
  const poisonFirst = await poisonChargebacks(poisoned.ref.userId);
  try {
    const poisonOther = await poisonChargebacks(other.ref.userId);
    let setupPass: ReconcileResult;
    try {
      resetChargeCursors();
      resetDisputeCursors();
      setupPass = await reconcileOnce(passOptions(bankUrl, userIds));
    } finally {
      await poisonOther.drop();
    }
    resetDisputeCursors();
    let result: DisputePassResult | null = null;
    let thrown: unknown = null;
    try {
      result = await step({
        bank: { bankUrl, timeoutMs: BANK_TIMEOUT_MS },
        userIds,
        lookBackMs: CHARGE_LOOK_BACK_MS_DEFAULT,
        logger: passOptions(bankUrl, userIds).logger,
      });
    } catch (error) {
      thrown = error;
    }
    return {
      setupPass,
      result,
      thrown,
      poisoned,
      other,
      poisonedLedger: await ledgerOf(poisoned.ref.userId),
      otherLedger: await ledgerOf(other.ref.userId),
    };
  } finally {
    await poisonFirst.drop();
  }
}

/**
 * The C29 assertions for the dispute step: it did not throw, reported the poisoned dispute with its merchant reference
 * and charge id, and landed the next dispute's chargeback; the poisoned user has none.
 */
export function assertDisputeIsolated(outcome: PoisonedDisputeOutcome): void {
  expect(outcome.thrown).toBeNull();
  expect(outcome.result?.errors).toEqual([
    {
      disputeId: expect.stringMatching(/^dp_/),
      merchantRef: outcome.poisoned.merchantRef,
      chargeId: expect.stringMatching(/^ch_/),
      detail: expect.stringContaining("XX001"),
    },
  ]);
  expect(outcome.result?.landed).toBe(1);
  expect(outcome.otherLedger.entries).toHaveLength(1);
  expect(outcome.poisonedLedger.entries).toHaveLength(0);
}
