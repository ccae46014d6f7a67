/**
 * `npm run bench -- --only payments` also runs transfers: a transfer as the app decides it, one autocommit call of the
 * function that locks both wallets (lower user id first) and then decides (lib/ledger transfer-statement.ts,
 * docs/decisions/061), in-process on lib/db's pool at a fixed concurrency, beside the payments of
 * ./in-process-payments.ts on the same 10,000 funded wallets. Two shapes: random sender and recipient pairs ("spread"),
 * and every sender paying one recipient ("popular recipient"), which the recipient's wallet lock and its running
 * balance serialise. The recipient lookup by email, the Redis copy and the rate limit are left out, as for payments
 * (the decision statement is what the two rows compare). Figures only: nothing asserts on time.
 */
import { randomUUID } from "node:crypto";
import { pool } from "../lib/db";
import { decideTransferUnderWalletLocks, operationKey, withTransactionRetry } from "../lib/ledger";
import { transferParams, transferResponses } from "../lib/transfers/create-transfer";
import { cpuSnapshot, cpuUse, type CpuTargets, type CpuUse } from "./cpu-accounting";
import { PAYMENT_USERS } from "./in-process-payments";
import { percentile } from "./stats";

const TRANSFER_AMOUNT_MINOR = 100;
const CURRENCY = "USD";
/** The recipients' balance ceiling: the highest setting (the wallets hold 10^12 minor units, see run.ts). */
const MAX_BALANCE_MINOR = 2 ** 52;
/** The popular recipient: user "1", the lowest id in text order, so its lock is always taken first. */
export const POPULAR_RECIPIENT = "1";

export type TransferShape = "spread" | "popular recipient";

/**
 * One transfer as createTransfer decides it, without the lookup by email and the Redis copy: one autocommit call of
 * the function that locks both wallets and decides, retried on 40001/40P01 as the app retries it. Throws unless it
 * was claimed and succeeded (a refusal would measure a cheaper path).
 */
async function transferOnce(senderId: string, recipientId: string, refId: string): Promise<void> {
  const input = { refId, to: `${recipientId}@bench.test`, amountMinor: TRANSFER_AMOUNT_MINOR, currency: CURRENCY };
  const params = transferParams(input);
  const decided = await withTransactionRetry(() =>
    decideTransferUnderWalletLocks(pool(), {
      key: operationKey(senderId, "transfer", refId),
      recipientId,
      amountMinor: TRANSFER_AMOUNT_MINOR,
      currency: CURRENCY,
      params,
      recipientParams: { from: `${senderId}@bench.test` },
      maxBalanceMinor: MAX_BALANCE_MINOR,
      responses: transferResponses({ userId: senderId, ...input }, params),
    }),
  );
  if (!decided) throw new Error(`bench: fresh transfer key ${refId} was not claimed`);
  if (decided.response.status !== 201)
    throw new Error(`bench: transfer ${refId} answered ${decided.response.status}: ${decided.response.body}`);
}

/** Figures of one measurement. */
export interface TransferFigures {
  readonly shape: TransferShape;
  readonly concurrency: number;
  readonly transfers: number;
  readonly transfersPerS: number;
  readonly latencyP50Ms: number | null;
  readonly latencyP99Ms: number | null;
  /** PostgreSQL CPU per transfer, ms. */
  readonly postgresCpuMsPerTransfer: number;
  /** This process's CPU per transfer (the app's side of the ledger), ms. */
  readonly appCpuMsPerTransfer: number;
  readonly cpu: CpuUse;
}

/** A random user id in 1..PAYMENT_USERS other than `not`. */
function randomUser(not: string | null): string {
  for (;;) {
    const id = String(1 + Math.floor(Math.random() * PAYMENT_USERS));
    if (id !== not) return id;
  }
}

/**
 * Runs transfers in `concurrency` loops for `durationS` seconds, each with a fresh ref id: between a random pair of
 * distinct users (`spread`), or from a random user to {@link POPULAR_RECIPIENT} (`popular recipient`).
 */
export async function runTransfers(
  shape: TransferShape,
  concurrency: number,
  durationS: number,
  targets: CpuTargets,
): Promise<TransferFigures> {
  const latencies: number[] = [];
  const before = cpuSnapshot(targets);
  const deadlineMs = performance.now() + durationS * 1000;
  const run = randomUUID().slice(0, 8);
  let sequence = 0;
  let failure: { error: unknown } | null = null;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadlineMs && failure === null) {
        const recipientId = shape === "spread" ? randomUser(null) : POPULAR_RECIPIENT;
        const senderId = randomUser(recipientId);
        const t0 = performance.now();
        try {
          await transferOnce(senderId, recipientId, `t${run}-${sequence++}`);
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
  const transfers = latencies.length;
  return {
    shape,
    concurrency,
    transfers,
    transfersPerS: transfers / (cpu.wallMs / 1000),
    latencyP50Ms: percentile(latencies, 50),
    latencyP99Ms: percentile(latencies, 99),
    postgresCpuMsPerTransfer: cpu.postgres / Math.max(1, transfers),
    appCpuMsPerTransfer: cpu.self / Math.max(1, transfers),
    cpu,
  };
}
