/**
 * Pays from the wallet balance: claim and debit in one transaction (contract sections 1, 3 and 8).
 */
import { openDebtMinor } from "../chargebacks/wallet-debt";
import { env } from "../env";
import { countOperation } from "../metrics/registry";
import { formatMinor } from "../money";
import { withTransaction } from "../db";
import {
  withTransactionRetry,
  prepared,
  type Queryable,
  awaitStoredResponse,
  cacheStoredResponse,
  completeEntry,
  failEntry,
  fromExisting,
  insertClaimOrLose,
  jsonStoredResponse,
  operationKey,
  paymentView,
  storeResponse,
  newLeaseOwner,
  type OperationResult,
  type StoredResponse,
} from "../ledger";
import { gateNewOperation, rateLimitedResult } from "../limits/new-operation-rate";
import { problemStoredResponse } from "../problems";

export interface CreatePaymentInput {
  /** From the authenticated session or API token. */
  readonly userId: string;
  /** The order's id, already validated like a ref id (contract section 1). */
  readonly orderId: string;
  /** Positive integer in minor units, already validated against MAX_AMOUNT_MINOR. */
  readonly amountMinor: number;
  readonly currency: string;
}

// The debit decides insufficient funds by itself (contract section 8): no row back means the balance
// did not cover the amount at the moment of the update, or a debt is open (contract section 12: payments wait until
// credits have repaid it). The balance CHECK is only the last line of defence.
const DEBIT_SQL = `
UPDATE wallets SET balance_minor = balance_minor - $2, updated_at = now()
 WHERE user_id = $1 AND balance_minor >= $2 AND debt_minor = 0
RETURNING balance_minor`;

/**
 * Debits `amountMinor` (minor units) from `userId`'s wallet on `db` (the payment's transaction) if the balance
 * covers it and no debt is open, in one conditional UPDATE (contract section 8: the debit itself decides).
 * Returns the new balance in minor units, or null when the balance was short, a debt is open (contract section 12)
 * or the user has no wallet.
 * Throws database errors as they come.
 */
export async function debitWallet(db: Queryable, userId: string, amountMinor: number): Promise<number | null> {
  const debited = await db.query<{ balance_minor: number }>(
    prepared("payment_debit", DEBIT_SQL, [userId, amountMinor]),
  );
  return debited.rows[0]?.balance_minor ?? null;
}

/**
 * Debits `amountMinor` once per `(user, "payment", orderId)`.
 *
 * In one READ COMMITTED transaction: claim the row, run the conditional debit, move the row to `succeeded`
 * or to `failed` ("insufficient_funds"), and store the response (201 `{ payment }` or 402 problem). A
 * concurrent duplicate blocks on the claim until this commits, then replays. A 402 is a stored outcome and
 * replays as 402 even after the balance grows: an outcome never flips; the user pays with a new order id
 * (docs/decisions/002-replay-semantics.md). Deadlocks and serialization failures are retried a bounded
 * number of times; nothing is persisted by a failed attempt.
 *
 * Returns `response`, `mismatch`, `in_progress`, or `refused rate_limited` for a new order id past
 * OPS_PER_MINUTE (nothing written). Throws on other database failures (500, nothing stored).
 */
export async function createPayment(input: CreatePaymentInput): Promise<OperationResult> {
  return countOperation("payment", await runPayment(input));
}

/** The payment itself (see {@link createPayment}). */
async function runPayment(input: CreatePaymentInput): Promise<OperationResult> {
  const settings = env();
  const key = operationKey(input.userId, "payment", input.orderId);
  const params = { amount: input.amountMinor, currency: input.currency };

  // Hot replays are answered from the Redis copy of the stored response when there is one; a key with a row is
  // never rate limited, and a new key counts once against OPS_PER_MINUTE (contract section 9).
  const gate = await gateNewOperation(key, params);
  if (gate.kind === "cached") return fromExisting(gate.outcome);
  if (gate.kind === "rate_limited") return rateLimitedResult(gate.retryAfterS);

  const response = await withTransactionRetry(() =>
    withTransaction(async (tx): Promise<StoredResponse | null> => {
      const entry = await insertClaimOrLose(tx, {
        key,
        amountMinor: input.amountMinor,
        currency: input.currency,
        params,
        leaseOwner: newLeaseOwner(),
        leaseMs: settings.LEASE_MS,
        actor: "request",
      });
      if (!entry) return null;
      const ref = { userId: input.userId, entryId: entry.id };
      const guard = { kind: "lease", attempt: entry.attempt } as const;

      const debited = (await debitWallet(tx, input.userId, input.amountMinor)) !== null;
      // Refused: an open debt is the reason to name (contract section 12), else the balance was short.
      const debtMinor = debited ? 0 : await openDebtMinor(tx, input.userId);
      const moved = debited
        ? await completeEntry(ref, { actor: "request", guard, credit: false }, tx)
        : await failEntry(
            ref,
            { actor: "request", guard, reason: debtMinor > 0 ? "debt_outstanding" : "insufficient_funds" },
            tx,
          );
      // The row was inserted by this transaction and nobody else can see it yet: the guard cannot refuse.
      if (moved.kind !== "moved")
        throw new Error(`payment ${input.orderId}: the fresh claim's transition did not move the row`);

      const first =
        moved.entry.status === "succeeded"
          ? jsonStoredResponse(201, { payment: paymentView(moved.entry) })
          : debtMinor > 0
            ? problemStoredResponse(
                "debt_outstanding",
                `The wallet owes ${formatMinor(debtMinor)} ${input.currency} from a disputed top-up; payments resume once a credit repays it.`,
              )
            : problemStoredResponse(
                "insufficient_funds",
                `The balance does not cover ${formatMinor(input.amountMinor)} ${input.currency}.`,
              );
      return (await storeResponse(ref, first, tx)).response;
    }),
  );
  if (response) {
    await cacheStoredResponse(key, params, response);
    return { kind: "response", response, replayed: false };
  }

  const existing = await awaitStoredResponse(key, params);
  // The key's row was read as absent after the claim saw it: only a deleted row can do that, and
  // unfinished rows are never deleted (contract section 2).
  if (!existing) throw new Error(`payment ${input.orderId}: claimed row vanished`);
  return fromExisting(existing);
}
