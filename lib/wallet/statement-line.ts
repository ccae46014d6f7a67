/**
 * One line of the customer's statement (`GET /api/v1/entries`, the wallet page's history, the movement page): the
 * ledger's view of an entry, with the readable reference people see and, for a payment, who was paid and the payer's
 * note (docs/decisions/055); for a transfer, the other user's address and the sender's note (contract section 15). Also the one place that says which entries are not movements of the customer's money.
 */
import { z } from "zod";
import { type LedgerEntry, paymentDetailsOf, statementEntryView, statementEntryViewSchema } from "../ledger";
import { readableReference } from "./readable-reference";

/**
 * `GET /api/v1/entries`'s line: the ledger's statement entry, its readable reference, a payment's payee and note, a
 * transfer's other user and note.
 */
export const statementLineSchema = statementEntryViewSchema
  .extend({
    reference: z.string().meta({
      description:
        "The movement's short reference for people (`PY-7K3Q-9D2M`: its kind, then eight characters derived from the " +
        "ledger entry), unique per movement; `q` finds it. `refId` is the full reference (docs/decisions/055).",
      example: "PY-7K3Q-9D2M",
    }),
    payee: z.string().optional().meta({ description: "A payment's payee, when it was made with one." }),
    note: z
      .string()
      .optional()
      .meta({ description: "A payment's or a transfer's note (sent or received), when it was made with one." }),
    to: z
      .string()
      .optional()
      .meta({ description: "A transfer sent (`transfer`): the recipient's email address, as the sender wrote it." }),
    from: z
      .string()
      .optional()
      .meta({ description: "A transfer received (`transfer_in`): the sender's email address." }),
  })
  .meta({ id: "StatementEntry", description: "One movement of the caller's money." });

export type StatementLine = z.infer<typeof statementLineSchema>;

/** The statement line of `entry`: the ledger's view, its readable reference, a payment's or a transfer's details. */
export function statementLine(entry: LedgerEntry): StatementLine {
  return {
    ...statementEntryView(entry),
    reference: readableReference(entry.type, entry.id),
    ...(entry.type === "payment" ? paymentDetailsOf(entry.params) : {}),
    ...(entry.type === "transfer" || entry.type === "transfer_in" ? transferDetailsOf(entry) : {}),
  };
}

/** A transfer's other user (`to` on the sender's row, `from` on the recipient's) and note, each when it is text. */
function transferDetailsOf(entry: LedgerEntry): { to?: string; from?: string; note?: string } {
  const { to, from, note } = entry.params;
  return {
    ...(entry.type === "transfer" && typeof to === "string" ? { to } : {}),
    ...(entry.type === "transfer_in" && typeof from === "string" ? { from } : {}),
    ...(typeof note === "string" ? { note } : {}),
  };
}

/**
 * The failure reasons of a refund refused at its claim: an admin's refund that never reserved money nor reached the
 * bank (prisma/functions/ledger_claim_refund.sql's verdicts). A refund the bank declined is `declined_by_bank`.
 */
export const REFUSED_REFUND_REASONS = [
  "insufficient_funds",
  "refund_exceeds_topup",
  "debt_outstanding",
  "topup_disputed",
] as const;

/**
 * SQL condition (over `ledger_entries` without an alias) for an entry that is a movement of the customer's money:
 * every entry but a refund refused at its claim, which moved nothing, reached no bank and was not the customer's
 * doing (docs/decisions/055). The statement's list and the movement page both filter with it.
 */
export const CUSTOMER_MOVEMENT_SQL = `NOT (type = 'refund' AND status = 'failed'
       AND failure_reason IN (${REFUSED_REFUND_REASONS.map((reason) => `'${reason}'`).join(", ")}))`;
