/**
 * `npm run bench -- --only payments`: a payment decided in one round trip, one autocommit call of the function that
 * locks the wallet and then decides (lib/ledger payment-statement.ts, docs/decisions/040) against the same payment as the two-step transaction it replaced (BEGIN; claim; debit;
 * transition; stored response; COMMIT: five round trips plus the debt read of a refusal, as the app sent it up to
 * main 40fb2bc), in-process on lib/db's pool, measured in the same run, interleaved (two-step, one statement, one
 * statement, two-step at each concurrency) so the machine's drift falls on both. Figures only: nothing asserts on
 * time. The Redis replay copy and the rate limit are left out of both (they are the same for both).
 */
import { randomUUID } from "node:crypto";
import { pool, withTransaction } from "../lib/db";
import {
  completeEntry,
  decidePaymentUnderWalletLock,
  failEntry,
  insertClaimOrLose,
  jsonStoredResponse,
  newLeaseOwner,
  operationKey,
  type PaymentResponses,
  paymentView,
  prepared,
  storeResponse,
  withTransactionRetry,
} from "../lib/ledger";
import { paymentResponses } from "../lib/payments/create-payment";
import { cpuSnapshot, cpuUse, type CpuTargets, type CpuUse } from "./cpu-accounting";
import { percentile } from "./stats";

/** Users the payments are spread over, each with a balance no run can spend. */
export const PAYMENT_USERS = 10_000;
const PAYMENT_AMOUNT_MINOR = 100;
const CURRENCY = "USD";

/** The debit as main 40fb2bc sent it, frozen here (the app's debit now lives inside the one statement). */
const TWO_STEP_DEBIT_SQL = `
UPDATE wallets SET balance_minor = balance_minor - $2, updated_at = now()
 WHERE user_id = $1 AND balance_minor >= $2 AND debt_minor = 0
RETURNING balance_minor`;
const TWO_STEP_DEBT_SQL = "SELECT debt_minor FROM wallets WHERE user_id = $1";

function responses(orderId: string): PaymentResponses {
  return paymentResponses(orderId, PAYMENT_AMOUNT_MINOR, CURRENCY);
}

/** One payment as the two-step transaction of main 40fb2bc (claim, debit, transition, stored response). */
async function twoStepPayment(userId: string, orderId: string): Promise<void> {
  const key = operationKey(userId, "payment", orderId);
  const params = { amount: PAYMENT_AMOUNT_MINOR, currency: CURRENCY };
  const leaseOwner = newLeaseOwner();
  await withTransactionRetry(() =>
    withTransaction(async (tx) => {
      const entry = await insertClaimOrLose(tx, {
        key,
        amountMinor: PAYMENT_AMOUNT_MINOR,
        currency: CURRENCY,
        params,
        leaseOwner,
        leaseMs: 30_000,
        actor: "request",
      });
      if (!entry) throw new Error(`bench: fresh payment key ${orderId} was not claimed`);
      const ref = { userId, entryId: entry.id };
      const guard = { kind: "lease", attempt: entry.attempt } as const;
      const debited =
        (await tx.query(prepared("bench_payment_debit", TWO_STEP_DEBIT_SQL, [userId, PAYMENT_AMOUNT_MINOR]))).rows
          .length > 0;
      if (!debited) await tx.query(prepared("bench_wallet_debt", TWO_STEP_DEBT_SQL, [userId]));
      const moved = debited
        ? await completeEntry(ref, { actor: "request", guard, credit: false }, tx)
        : await failEntry(ref, { actor: "request", guard, reason: "insufficient_funds" }, tx);
      if (moved.kind !== "moved") throw new Error("bench: the fresh claim's transition did not move the row");
      const response = debited
        ? jsonStoredResponse(201, { payment: paymentView(moved.entry) })
        : responses(orderId).insufficientFunds;
      await storeResponse(ref, response, tx);
    }),
  );
}

/**
 * One payment decided in one round trip: one autocommit call of the function that locks the wallet and then decides
 * (what createPayment sends now, without the Redis copy).
 */
async function oneStatementPayment(userId: string, orderId: string): Promise<void> {
  const key = operationKey(userId, "payment", orderId);
  const decided = await withTransactionRetry(() =>
    decidePaymentUnderWalletLock(pool(), {
      key,
      amountMinor: PAYMENT_AMOUNT_MINOR,
      currency: CURRENCY,
      params: { amount: PAYMENT_AMOUNT_MINOR, currency: CURRENCY },
      responses: responses(orderId),
    }),
  );
  if (!decided) throw new Error(`bench: fresh payment key ${orderId} was not claimed`);
}

export type PaymentVariant = "two-step" | "one statement";

/** Figures of one measurement of one variant. */
export interface PaymentFigures {
  readonly variant: PaymentVariant;
  readonly concurrency: number;
  readonly payments: number;
  readonly paymentsPerS: number;
  readonly latencyP50Ms: number | null;
  readonly latencyP99Ms: number | null;
  /** PostgreSQL CPU per payment, ms. */
  readonly postgresCpuMsPerPayment: number;
  /** This process's CPU per payment (the app's side of the ledger), ms. */
  readonly appCpuMsPerPayment: number;
  readonly cpu: CpuUse;
}

/** Runs `variant` in `concurrency` loops for `durationS` seconds, each on a random user and a fresh order id. */
export async function runPayments(
  variant: PaymentVariant,
  concurrency: number,
  durationS: number,
  targets: CpuTargets,
): Promise<PaymentFigures> {
  const pay = variant === "two-step" ? twoStepPayment : oneStatementPayment;
  const latencies: number[] = [];
  const before = cpuSnapshot(targets);
  const deadlineMs = performance.now() + durationS * 1000;
  const run = randomUUID().slice(0, 8);
  let sequence = 0;
  let failure: { error: unknown } | null = null;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadlineMs && failure === null) {
        const userId = String(1 + Math.floor(Math.random() * PAYMENT_USERS));
        const t0 = performance.now();
        try {
          await pay(userId, `p${run}-${sequence++}`);
        } catch (error) {
          failure ??= { error };
          break;
        }
        latencies.push(performance.now() - t0);
      }
    }),
  );
  if (failure !== null) throw (failure as { error: unknown }).error;
  const cpu = cpuUse(before, cpuSnapshot(targets));
  const payments = latencies.length;
  return {
    variant,
    concurrency,
    payments,
    paymentsPerS: payments / (cpu.wallMs / 1000),
    latencyP50Ms: percentile(latencies, 50),
    latencyP99Ms: percentile(latencies, 99),
    postgresCpuMsPerPayment: cpu.postgres / Math.max(1, payments),
    appCpuMsPerPayment: cpu.self / Math.max(1, payments),
    cpu,
  };
}
