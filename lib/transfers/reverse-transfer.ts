/**
 * An admin takes a succeeded transfer back (contract section 15; docs/decisions/063): the sender's credit, the
 * recipient's debit, their terminal rows and the stored response in one statement (lib/ledger transfer-reversal.ts).
 */
import { pool } from "../db";
import { countOperation } from "../metrics/registry";
import {
  findEntryByKey,
  fromClaimRun,
  jsonResponseTemplate,
  operationKey,
  reverseTransferUnderWalletLocks,
  runClaimedOperation,
  type LedgerEntry,
  type OperationResult,
  type ResponseTemplate,
  type ReversedTransfer,
} from "../ledger";

export interface ReverseTransferInput {
  /** The transfer's sender (from the admin route's path or the admin page's form). */
  readonly userId: string;
  /** The transfer's ref id, the sender's (contract section 1). */
  readonly refId: string;
  /** The admin's reason: 1..REVERSAL_REASON_LENGTH_MAX characters of readable text, already validated. */
  readonly reason: string;
  /** The admin's user id, for the audit rows; not part of the key or the fingerprint. */
  readonly adminId: string;
}

export type ReverseTransferResult =
  | OperationResult
  /** The sender has no transfer with this ref id (404, not stored). */
  | { readonly kind: "transfer_not_found" }
  /** The transfer failed: it moved nothing, so nothing is taken back (409 transfer_not_reversible, not stored). */
  | { readonly kind: "transfer_not_reversible"; readonly status: string };

/**
 * Reverses the transfer `(userId, "transfer", refId)` exactly once: the key is `(userId, "transfer_reversal", refId)`,
 * so however many admins press the button, however often, one reversal is made and every answer is its stored one.
 *
 * The transfer is read first: none is `transfer_not_found`, one that is not `succeeded` is `transfer_not_reversible`
 * (a row under the reversal's key answers first; a failed transfer never has one). Then one autocommit statement locks
 * both wallets (lower user id first, as every transfer does), claims the sender's `transfer_reversal` row `succeeded`
 * with its stored 201 `{ reversal }`, debits the whole amount from the recipient through their own
 * `transfer_reversal_out` row (what their balance no longer covers becomes their debt, as a chargeback's does: the
 * admin's decision is not refused because the money was spent) and credits it to the sender (a debt repaid first,
 * never refused for the balance ceiling: it is the sender's own money). A duplicate waits on the wallet locks, then
 * replays the stored 201 (Idempotent-Replayed); the same transfer with another reason is `mismatch` (422
 * idempotency_key_reused); `in_progress` when the winner's answer is not stored within the wait.
 *
 * Throws on database failures (500; a CommitUncertainError once the statement was sent: the key's row, if any,
 * answers the retry) and when the transfer's recipient cannot be found (a bug: an account is never deleted).
 */
export async function reverseTransfer(input: ReverseTransferInput): Promise<ReverseTransferResult> {
  const result = await runReversal(input);
  return result.kind === "transfer_not_found" || result.kind === "transfer_not_reversible"
    ? result
    : countOperation("transfer_reversal", result);
}

async function runReversal(input: ReverseTransferInput): Promise<ReverseTransferResult> {
  const transfer = await findEntryByKey(operationKey(input.userId, "transfer", input.refId));
  if (!transfer) return { kind: "transfer_not_found" };
  const key = operationKey(input.userId, "transfer_reversal", input.refId);
  const params = { reason: input.reason };
  const recipientId = transfer.status === "succeeded" ? await recipientOf(transfer) : null;
  const run = await runClaimedOperation<ReversedTransfer, string>({
    key,
    params,
    replayCopy: "read",
    attempt: async ({ mayCommit }) => {
      // Nothing to take back from a failed transfer; a row under the reversal's key still answers first.
      if (recipientId === null) return { kind: "abandoned", detail: transfer.status, unlessKeyTaken: true };
      mayCommit();
      const reversed = await reverseTransferUnderWalletLocks(pool(), {
        key,
        recipientId,
        params,
        recipientParams: { reason: input.reason },
        succeeded: succeededReversalResponse(transfer, input.reason),
        detail: `reversed by admin ${input.adminId}`,
      });
      if (!reversed) return { kind: "lost" };
      return { kind: "decided", response: reversed.response, detail: reversed };
    },
  });
  if (run.kind === "abandoned") return { kind: "transfer_not_reversible", status: run.detail };
  return fromClaimRun(run);
}

/**
 * The user who received `transfer`: the owner of the address the sender named (stored lower case; an account's
 * address never changes and an account is never deleted). The statement checks that this user's `transfer_in` row,
 * keyed by the transfer's entry id, exists, so a wrong answer here moves nothing.
 */
async function recipientOf(transfer: LedgerEntry): Promise<string> {
  const to = String(transfer.params.to ?? "");
  const found = await pool().query<{ id: string }>(`SELECT id FROM "user" WHERE email = $1`, [to.toLowerCase()]);
  const recipientId = found.rows[0]?.id;
  if (recipientId === undefined) throw new Error(`transfer ${transfer.id}: no account has its recipient's address`);
  return recipientId;
}

/**
 * The stored 201 of a reversal (contract section 15), before the statement runs: `{ reversal }` with its time left as
 * a slot for the statement to fill with the row's time.
 */
function succeededReversalResponse(transfer: LedgerEntry, reason: string): ResponseTemplate {
  return jsonResponseTemplate(201, (slot) => ({
    reversal: {
      transferRefId: transfer.refId,
      to: String(transfer.params.to ?? ""),
      amount: transfer.amountMinor,
      currency: transfer.currency,
      reason,
      status: "succeeded",
      createdAt: slot,
    },
  }));
}
