/**
 * The API's JSON shapes of ledger rows (contract section 4) as zod schemas: the one definition from which the
 * TypeScript types of lib/ledger/views.ts are inferred and the OpenAPI document (lib/openapi) is generated, so
 * the description, the types and the bytes a route sends cannot drift apart unnoticed (the http
 * suite validates every response against the served document). Objects are strict: a field that is not declared
 * here is a field the document does not promise, and the response validator refuses it.
 *
 * Declarations only: StrykerJS leaves this file out (stryker.config.json); the contract tests are its tests.
 */
import { z } from "zod";
import { LEDGER_TYPES } from "./keys";

export const ENTRY_STATUSES = ["initiated", "processing", "succeeded", "failed"] as const;

const status = z.enum(ENTRY_STATUSES).meta({
  id: "EntryStatus",
  description: "`initiated` → `processing` → `succeeded` | `failed` (contract section 2); the last two are final.",
});
const amount = z
  .int()
  .min(1)
  .max(Number.MAX_SAFE_INTEGER)
  .meta({ description: "Integer minor units (cents for USD)." });
const currency = z
  .string()
  .regex(/^[A-Z]{3}$/)
  .meta({ description: "ISO 4217 code: the wallet's currency (WALLET_CURRENCY).", example: "USD" });
const time = z.iso.datetime().meta({ description: "ISO-8601 UTC, millisecond precision." });
const failureReason = z
  .string()
  .nullable()
  .meta({ description: "Why a `failed` row failed (`declined_by_bank`, `insufficient_funds`, `expired`, ...)." });
const refId = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/);

/** What every movement shows after its own reference: amount, currency, state, why it failed, times. */
const movement = { amount, currency, status, failureReason, createdAt: time, updatedAt: time };

/** `T` of contract section 4. */
export const topupViewSchema = z
  .strictObject({ refId, ...movement })
  .meta({ id: "Topup", description: "A top-up (`T` of the contract)." });

/** Who a payment paid and the payer's note: present only when the payment was made with them (decision 055). */
const payee = z.string().meta({ description: "Who was paid (a merchant or order name), when the payer said." });
const note = z.string().meta({ description: "The payer's note, when given." });

export const paymentViewSchema = z
  .strictObject({ orderId: refId, payee: payee.optional(), note: note.optional(), ...movement })
  .meta({ id: "Payment" });

export const rewardViewSchema = z
  .strictObject({
    adId: z.string(),
    day: z.iso.date().meta({ description: "The local day (REWARD_TZ) the reward counts against." }),
    amount,
    currency,
    status,
    createdAt: time,
    updatedAt: time,
  })
  .meta({ id: "Reward" });

/**
 * The ledger's part of a statement line (`GET /api/v1/entries`): every movement. lib/wallet/statement-line.ts adds the
 * readable reference, the payee and the note, and names the result `StatementEntry` in the OpenAPI document.
 */
export const statementEntryViewSchema = z.strictObject({
  type: z
    .enum(LEDGER_TYPES)
    .meta({ description: "`payment`, `refund` and `chargeback` are debits; the others are credits." }),
  refId: refId.meta({ description: "The movement's full reference (its key's ref id, contract section 1)." }),
  ...movement,
});

/** A transfer sent (contract section 15): the sender's reference, the recipient's address as the sender wrote it. */
export const transferViewSchema = z
  .strictObject({
    refId,
    to: z.string().meta({ description: "The recipient's email address, as the sender wrote it." }),
    note: z.string().optional().meta({ description: "The sender's note, when given." }),
    ...movement,
  })
  .meta({ id: "Transfer", description: "A transfer to another user (contract section 15): final once `succeeded`." });

/** A withdrawal to a bank account (contract section 14). */
export const payoutViewSchema = z
  .strictObject({
    refId,
    destination: z.string().meta({ description: "The sandbox bank account number paid to (10 digits)." }),
    ...movement,
  })
  .meta({
    id: "Payout",
    description:
      "A withdrawal (contract section 14): `processing` until the bank's word; `succeeded` when paid, `failed` when " +
      "the bank failed it (the held money is back in the balance).",
  });

/** The 201 bodies of the operations, stored with the row and replayed byte for byte (contract section 3). */
export const topupResponseSchema = z.strictObject({ topup: topupViewSchema }).meta({ id: "TopupResponse" });
export const paymentResponseSchema = z.strictObject({ payment: paymentViewSchema }).meta({ id: "PaymentResponse" });
export const rewardResponseSchema = z.strictObject({ reward: rewardViewSchema }).meta({ id: "RewardResponse" });
export const transferResponseSchema = z.strictObject({ transfer: transferViewSchema }).meta({ id: "TransferResponse" });
export const payoutResponseSchema = z.strictObject({ payout: payoutViewSchema }).meta({ id: "PayoutResponse" });
