/**
 * The wallet page's form references (case C20, docs/decisions/033-form-references.md) and the parsing of the
 * amounts typed into its forms.
 *
 * A form reference is `web:` followed by a random UUID, minted by the server (lib/web/current-form-ref-id.ts).
 * The `web:` namespace belongs to the forms: the API refuses a `refId`/`orderId` in it
 * (lib/http/operation-requests.ts), so nothing a client sends can ever name a reference a form will show, and a
 * random UUID cannot be guessed ahead of its minting. The old scheme numbered references by counting the user's
 * rows (`web-topup-<n+1>`); one API top-up named ahead of the count made every later render show a used one.
 */
import { randomUUID } from "node:crypto";

/** The namespace of references minted for the wallet page's forms; refused from API clients. */
export const FORM_REF_PREFIX = "web:";

/** Exactly what {@link mintFormRefId} makes: `web:` and a lowercase version-4 UUID (40 characters). */
const FORM_REF_PATTERN = /^web:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * The forms that carry a reference: the top-up form, the pay form (its reference is the order id), the send form (a
 * transfer's refId) and the withdraw form (a payout's refId). Each is the type of the ledger entry that claims it.
 */
export type FormType = "topup" | "payment" | "transfer" | "payout";

/**
 * A new form reference: `web:` and a random version-4 UUID (122 random bits from node:crypto), a valid ref id
 * (contract section 1). Pure apart from the randomness; storing it is {@link currentFormRefId}'s job.
 */
export function mintFormRefId(): string {
  return `${FORM_REF_PREFIX}${randomUUID()}`;
}

/** True when `refId` has the exact shape {@link mintFormRefId} produces (not whether it was minted). */
export function isFormRefId(refId: string): boolean {
  return FORM_REF_PATTERN.test(refId);
}

/** True when `refId` lies in the forms' namespace (`web:`...), which API clients may not use. */
export function inFormRefNamespace(refId: string): boolean {
  return refId.startsWith(FORM_REF_PREFIX);
}
