/**
 * Pays from the wallet balance: claim, debit, terminal state and stored response in one statement (contract
 * sections 1, 3 and 8; docs/decisions/040).
 */
import { pool } from "../db";
import { countOperation } from "../metrics/registry";
import { formatMinor } from "../money";
import {
  decidePaymentUnderWalletLock,
  fromClaimRun,
  fromExisting,
  jsonResponseTemplate,
  operationKey,
  runClaimedOperation,
  succeededPaymentResponse,
  type DecidedPayment,
  type PaymentDetails,
  type OperationResult,
  type PaymentResponses,
} from "../ledger";
import { gateNewOperation, rateLimitedResult } from "../limits/new-operation-rate";
import { problem, problemStoredResponse } from "../problems";

export interface CreatePaymentInput {
  /** From the authenticated session or API token. */
  readonly userId: string;
  /** The order's id, already validated like a ref id (contract section 1). */
  readonly orderId: string;
  /** Positive integer in minor units, already validated against MAX_AMOUNT_MINOR. */
  readonly amountMinor: number;
  readonly currency: string;
  /** Who is paid (lib/payments/payees.ts bounds), when the payer said; absent for an API client that does not. */
  readonly payee?: string;
  /** The payer's note, when given. */
  readonly note?: string;
}

/**
 * The payment's fingerprinted parameters (contract sections 1 and 3): the amount and currency, and the payee and the
 * note when given (docs/decisions/055). A field left out is absent, not empty, so a payment without them has the
 * fingerprint it always had, and the same order id with another payee or note is refused like another amount, by
 * the one comparison every operation's loser makes (lib/ledger claim-runner.ts, `differingFields`).
 */
export function paymentParams(
  input: Omit<CreatePaymentInput, "userId" | "orderId">,
): Readonly<Record<string, string | number>> {
  return {
    amount: input.amountMinor,
    currency: input.currency,
    ...(input.payee === undefined ? {} : { payee: input.payee }),
    ...(input.note === undefined ? {} : { note: input.note }),
  };
}

/**
 * Debits `amountMinor` once per `(user, "payment", orderId)`.
 *
 * In one autocommit statement (lib/ledger payment-statement.ts, run by the claim runner), which locks the wallet
 * row and then claims the row already terminal: `succeeded` with the conditional debit or `failed`
 * ("insufficient_funds", or "debt_outstanding" while a debt is open, contract section 12), with its audit rows and
 * its stored response (201 `{ payment }` or 402 problem). A concurrent duplicate waits on the wallet row until this
 * commits, then finds the key taken and replays. A 402 is a stored outcome and replays as 402 even after the balance
 * grows: an outcome never flips; the user pays with a new order id
 * (docs/decisions/002-replay-semantics.md). Deadlocks and serialization failures are retried a bounded
 * number of times; nothing is persisted by a failed attempt.
 *
 * Returns `response`, `mismatch`, `in_progress`, or `refused rate_limited` for a new order id past
 * OPS_PER_MINUTE (nothing written). Throws on other database failures (500): a CommitUncertainError once the
 * statement was sent (lib/ledger claim-runner.ts; the key's row, if any, then answers the client's retry).
 */
export async function createPayment(input: CreatePaymentInput): Promise<OperationResult> {
  return countOperation("payment", await runPayment(input));
}

/** The payment itself (see {@link createPayment}). */
async function runPayment(input: CreatePaymentInput): Promise<OperationResult> {
  const key = operationKey(input.userId, "payment", input.orderId);
  const params = paymentParams(input);

  // Hot replays are answered from the Redis copy of the stored response when there is one; a key with a row is
  // never rate limited, and a new key counts once against OPS_PER_MINUTE (contract section 9).
  const gate = await gateNewOperation(key, params);
  if (gate.kind === "cached") return fromExisting(gate.outcome);
  if (gate.kind === "rate_limited") return rateLimitedResult(gate.retryAfterS);
  const responses = paymentResponses(input.orderId, input.amountMinor, input.currency, input);

  const ran = await runClaimedOperation<DecidedPayment>({
    key,
    params,
    // The gate has just read the replay copy.
    replayCopy: "read_by_caller",
    attempt: async ({ mayCommit }) => {
      // One autocommit statement: once sent, it may have committed whatever its answer (a lost connection).
      mayCommit();
      const decided = await decidePaymentUnderWalletLock(pool(), {
        key,
        amountMinor: input.amountMinor,
        currency: input.currency,
        params,
        responses,
      });
      // No row back: the key was taken and this statement wrote nothing (it only held the wallet lock).
      if (!decided) return { kind: "lost" };
      return { kind: "decided", response: decided.response, detail: decided };
    },
  });
  return fromClaimRun(ran);
}

/**
 * The three first responses a payment of `amountMinor` (minor units of `currency`) for `orderId` may store
 * (contract sections 3, 8 and 12): the statement picks one from the locked wallet row and fills in the row's time
 * or the wallet's debt (the templates' slots, lib/ledger/response-template.ts). `details` holds the payee and the
 * note the 201 names when given (docs/decisions/055). Exported for the bench, which stores the same responses.
 */
export function paymentResponses(
  orderId: string,
  amountMinor: number,
  currency: string,
  details: PaymentDetails = {},
): PaymentResponses {
  return {
    succeeded: succeededPaymentResponse(orderId, amountMinor, currency, details),
    insufficientFunds: problemStoredResponse(
      "insufficient_funds",
      `The balance does not cover ${formatMinor(amountMinor)} ${currency}.`,
    ),
    debtOutstanding: jsonResponseTemplate(402, (debt) =>
      problem(
        "debt_outstanding",
        `The wallet owes ${debt} ${currency} from a disputed top-up; payments resume once a credit repays it.`,
      ),
    ),
  };
}
