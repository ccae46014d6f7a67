/**
 * Sends money to another user (contract section 15; docs/decisions/061): claim, sender's debit, recipient's entry and
 * credit, terminal state and stored response in one statement (lib/ledger transfer-statement.ts).
 */
import { pool } from "../db";
import { env } from "../env";
import { countOperation } from "../metrics/registry";
import { formatMinor } from "../money";
import {
  decideTransferUnderWalletLocks,
  fromClaimRun,
  fromExisting,
  jsonResponseTemplate,
  operationKey,
  runClaimedOperation,
  succeededTransferResponse,
  type DecidedTransfer,
  type OperationResult,
  type TransferResponses,
} from "../ledger";
import { CounterLimiter, type LimitRule } from "../limits/counter-limiter";
import { gateNewOperation, rateLimitedResult } from "../limits/new-operation-rate";
import { problem, problemStoredResponse } from "../problems";

export interface CreateTransferInput {
  /** The sender, from the authenticated session or API token. */
  readonly userId: string;
  /** The sender's reference, already validated like a ref id (contract section 1). */
  readonly refId: string;
  /** The recipient's email address, as the sender wrote it (already validated as an address). */
  readonly to: string;
  /** Positive integer in minor units, already validated against MAX_AMOUNT_MINOR. */
  readonly amountMinor: number;
  readonly currency: string;
  /** The sender's note, when given. */
  readonly note?: string;
}

/**
 * Contract section 15: a sender may name at most 5 addresses that belong to nobody per 15 minutes, the sign-in
 * throttle's pace for one email and address (section 9), so the transfer form cannot be used to test which addresses
 * have accounts faster than the sign-in form can. Counted before the lookup and given back when the address is known,
 * so once the budget is spent every lookup is refused, known address or not.
 */
export const RECIPIENT_MISS_RULE: LimitRule = { name: "transfer-recipient-miss", points: 5, durationS: 15 * 60 };
const recipientMisses = new CounterLimiter(RECIPIENT_MISS_RULE);

/**
 * The transfer's fingerprinted parameters (contract sections 1 and 15): amount, currency, the recipient's address as
 * written and the note when given. The same refId with another recipient, amount or note is refused (422
 * idempotency_key_reused) by the one comparison every loser makes.
 */
export function transferParams(
  input: Omit<CreateTransferInput, "userId" | "refId">,
): Readonly<Record<string, string | number>> {
  return {
    amount: input.amountMinor,
    currency: input.currency,
    to: input.to,
    ...(input.note === undefined ? {} : { note: input.note }),
  };
}

/**
 * Sends `amountMinor` from `userId` to the user whose email is `to`, once per `(sender, "transfer", refId)`.
 *
 * The recipient is looked up first (case-insensitively, as addresses are stored lower case): 422 `transfer_to_self`
 * for the sender's own address, 422 `recipient_unknown` for an address with no account, 429 `rate_limited` once the
 * sender has named {@link RECIPIENT_MISS_RULE}'s unknown addresses; none of these is stored (nothing is claimed).
 * Then one autocommit statement locks both wallets (lower user id first) and claims the sender's row terminal:
 * `succeeded` (201 `{ transfer }`, the sender debited and the recipient credited through their own `transfer_in` row,
 * a debt of theirs repaid first) or `failed` with a stored 402 `insufficient_funds` / `debt_outstanding` or 422
 * `recipient_cannot_receive` (their balance ceiling). A duplicate waits on the wallet locks, then replays.
 *
 * Returns `response`, `mismatch`, `in_progress` or `refused`. Throws on other database failures (500; a
 * CommitUncertainError once the statement was sent: the key's row, if any, answers the retry).
 */
export async function createTransfer(input: CreateTransferInput): Promise<OperationResult> {
  const result = await runTransfer(input);
  return result.kind === "refused" && result.code !== "rate_limited" ? result : countOperation("transfer", result);
}

async function runTransfer(input: CreateTransferInput): Promise<OperationResult> {
  const key = operationKey(input.userId, "transfer", input.refId);
  const params = transferParams(input);
  const gate = await gateNewOperation(key, params);
  if (gate.kind === "cached") return fromExisting(gate.outcome);
  if (gate.kind === "rate_limited") return rateLimitedResult(gate.retryAfterS);
  const recipient = await findRecipient(input.userId, input.to);
  if (recipient.kind !== "found") return recipient.result;
  const sender = await pool().query<{ email: string }>(`SELECT email FROM "user" WHERE id = $1`, [input.userId]);

  const ran = await runClaimedOperation<DecidedTransfer>({
    key,
    params,
    replayCopy: "read_by_caller",
    attempt: async ({ mayCommit }) => {
      mayCommit();
      const decided = await decideTransferUnderWalletLocks(pool(), {
        key,
        recipientId: recipient.userId,
        amountMinor: input.amountMinor,
        currency: input.currency,
        params,
        recipientParams: {
          from: sender.rows[0]?.email ?? "",
          ...(input.note === undefined ? {} : { note: input.note }),
        },
        maxBalanceMinor: env().MAX_BALANCE_MINOR,
        responses: transferResponses(input, params),
      });
      if (!decided) return { kind: "lost" };
      return { kind: "decided", response: decided.response, detail: decided };
    },
  });
  return fromClaimRun(ran);
}

type RecipientLookup =
  | { readonly kind: "found"; readonly userId: string }
  | { readonly kind: "refused"; readonly result: OperationResult };

/** The recipient's user id, or the refusal (self, unknown, too many unknown addresses): see {@link createTransfer}. */
async function findRecipient(senderId: string, to: string): Promise<RecipientLookup> {
  const budget = await recipientMisses.count(senderId);
  if (!budget.allowed) {
    return {
      kind: "refused",
      result: {
        kind: "refused",
        code: "rate_limited",
        detail: `Too many unknown recipients; nothing was sent. Retry after ${budget.retryAfterS} s.`,
        retryAfterS: budget.retryAfterS,
      },
    };
  }
  const found = await pool().query<{ id: string }>(`SELECT id FROM "user" WHERE email = $1`, [to.toLowerCase()]);
  const recipientId = found.rows[0]?.id;
  if (recipientId !== undefined) await recipientMisses.refund(senderId);
  if (recipientId === senderId) {
    return {
      kind: "refused",
      result: { kind: "refused", code: "transfer_to_self", detail: "You cannot send money to yourself." },
    };
  }
  if (recipientId === undefined) {
    return {
      kind: "refused",
      result: {
        kind: "refused",
        code: "recipient_unknown",
        detail: "No account has this email address; nothing was sent.",
      },
    };
  }
  return { kind: "found", userId: recipientId };
}

/** The first responses a transfer may store (contract section 15); the statement picks one under the wallet locks. */
export function transferResponses(
  input: CreateTransferInput,
  params: Readonly<Record<string, string | number>>,
): TransferResponses {
  return {
    succeeded: succeededTransferResponse(input.refId, input.amountMinor, input.currency, params),
    insufficientFunds: problemStoredResponse(
      "insufficient_funds",
      `The balance does not cover ${formatMinor(input.amountMinor)} ${input.currency}.`,
    ),
    debtOutstanding: jsonResponseTemplate(402, (debt) =>
      problem(
        "debt_outstanding",
        `The wallet owes ${debt} ${input.currency} from a disputed top-up; transfers resume once a credit repays it.`,
      ),
    ),
    recipientCannotReceive: problemStoredResponse(
      "recipient_cannot_receive",
      "The recipient's wallet cannot take this amount now; nothing was sent.",
    ),
  };
}
