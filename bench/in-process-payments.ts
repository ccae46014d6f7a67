/**
 * `npm run bench -- --only payments`: a payment as the app decides it, one autocommit call of the function that locks
 * the wallet and then decides (lib/ledger payment-statement.ts, docs/decisions/040), in-process on lib/db's pool at a
 * fixed concurrency, with the payments/s, latency and CPU per payment of PostgreSQL and of this process. Figures
 * only: nothing asserts on time. The Redis replay copy and the rate limit are left out (the HTTP part measures the
 * whole route).
 */
import { randomUUID } from "node:crypto";
import { pool } from "../lib/db";
import { decidePaymentUnderWalletLock, operationKey, withTransactionRetry } from "../lib/ledger";
import { paymentResponses } from "../lib/payments/create-payment";
import { cpuSnapshot, cpuUse, type CpuTargets, type CpuUse } from "./cpu-accounting";
import { percentile } from "./stats";

/** Users the payments are spread over, each with a balance no run can spend. */
export const PAYMENT_USERS = 10_000;
const PAYMENT_AMOUNT_MINOR = 100;
const CURRENCY = "USD";

/**
 * One payment as createPayment decides it, without the Redis copy: one autocommit call of the function that locks the
 * wallet and then decides, retried on 40001/40P01 as the app retries it.
 */
async function payOnce(userId: string, orderId: string): Promise<void> {
  const decided = await withTransactionRetry(() =>
    decidePaymentUnderWalletLock(pool(), {
      key: operationKey(userId, "payment", orderId),
      amountMinor: PAYMENT_AMOUNT_MINOR,
      currency: CURRENCY,
      params: { amount: PAYMENT_AMOUNT_MINOR, currency: CURRENCY },
      responses: paymentResponses(orderId, PAYMENT_AMOUNT_MINOR, CURRENCY),
    }),
  );
  if (!decided) throw new Error(`bench: fresh payment key ${orderId} was not claimed`);
}

/** Figures of one measurement. */
export interface PaymentFigures {
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

/** Runs payments in `concurrency` loops for `durationS` seconds, each on a random user and a fresh order id. */
export async function runPayments(
  concurrency: number,
  durationS: number,
  targets: CpuTargets,
): Promise<PaymentFigures> {
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
          await payOnce(userId, `p${run}-${sequence++}`);
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
