/**
 * Pays from the wallet balance: claim and debit in one transaction (contract sections 1, 3 and 8).
 */
import { openDebtMinor } from "../chargebacks/wallet-debt";
import { env } from "../env";
import { countOperation } from "../metrics/registry";
import { formatMinor } from "../money";
import {
  debitWallet,
  decideInClaimTransaction,
  failEntry,
  completeEntry,
  fromExisting,
  jsonStoredResponse,
  movedOrThrow,
  operationKey,
  paymentView,
  runClaimedOperation,
  type OperationResult,
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

  const ran = await runClaimedOperation({
    key,
    params,
    attempt: decideInClaimTransaction(
      {
        key,
        amountMinor: input.amountMinor,
        currency: input.currency,
        params,
        leaseMs: settings.LEASE_MS,
        actor: "request",
      },
      async (tx, claim) => {
        const debited = (await debitWallet(tx, input.userId, input.amountMinor)) !== null;
        // Refused: an open debt is the reason to name (contract section 12), else the balance was short.
        const debtMinor = debited ? 0 : await openDebtMinor(tx, input.userId);
        const entry = movedOrThrow(
          debited
            ? await completeEntry(claim.ref, { actor: "request", guard: claim.guard, credit: false }, tx)
            : await failEntry(
                claim.ref,
                {
                  actor: "request",
                  guard: claim.guard,
                  reason: debtMinor > 0 ? "debt_outstanding" : "insufficient_funds",
                },
                tx,
              ),
          `payment ${input.orderId}`,
        );
        const response =
          entry.status === "succeeded"
            ? jsonStoredResponse(201, { payment: paymentView(entry) })
            : debtMinor > 0
              ? problemStoredResponse(
                  "debt_outstanding",
                  `The wallet owes ${formatMinor(debtMinor)} ${input.currency} from a disputed top-up; payments resume once a credit repays it.`,
                )
              : problemStoredResponse(
                  "insufficient_funds",
                  `The balance does not cover ${formatMinor(input.amountMinor)} ${input.currency}.`,
                );
        return { kind: "store", response, detail: null };
      },
    ),
  });
  if (ran.kind === "decided") return { kind: "response", response: ran.response, replayed: false };
  if (ran.kind === "existing") return fromExisting(ran.outcome);
  throw new Error(`payment ${input.orderId}: a payment decision never abandons`);
}
