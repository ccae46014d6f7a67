/**
 * Reads the bank's whole charge list for the audit (`GET /charges?since=1970-01-01T00:00:00Z`, paged).
 */
import { listChargesSince, type BankCharge } from "../../bank/client";
import type { AuditBankOptions } from "./scope";

/** The bank's largest page (docs/bank-sandbox.md). */
const PAGE_LIMIT = 1000;

/**
 * Most pages read: 200 x 1000 = 200,000 charges. The sandbox keeps every charge and is documented as fine "up to
 * tens of thousands"; an audit of more than that is reported as incomplete instead of running unbounded.
 */
export const AUDIT_CHARGE_PAGES_MAX = 200;

/** The start of the bank's history for `since` (every charge is created after it). */
const EPOCH_ISO = "1970-01-01T00:00:00.000Z";

export type BankChargesRead =
  | { readonly kind: "charges"; readonly charges: BankCharge[] }
  /** The bank did not answer, or answered something unusable: the audit cannot compare. */
  | { readonly kind: "unreachable"; readonly reason: string }
  | { readonly kind: "too_many"; readonly pagesRead: number };

/**
 * Reads every charge the bank has, oldest first. Returns `charges`, `unreachable` (with the client's reason) or
 * `too_many` (past {@link AUDIT_CHARGE_PAGES_MAX} pages). Never throws for the bank's behaviour.
 */
export async function readAllBankCharges(bank: AuditBankOptions): Promise<BankChargesRead> {
  const charges: BankCharge[] = [];
  let startingAfter: string | undefined;
  for (let page = 0; page < AUDIT_CHARGE_PAGES_MAX; page++) {
    const listed = await listChargesSince(EPOCH_ISO, { ...bank, limit: PAGE_LIMIT, startingAfter });
    if (listed.kind === "unknown")
      return { kind: "unreachable", reason: listed.detail ? `${listed.reason}: ${listed.detail}` : listed.reason };
    if (listed.kind === "rejected")
      return { kind: "unreachable", reason: `the bank refused the listing: ${listed.status} ${listed.code}` };
    charges.push(...listed.charges);
    const last = listed.charges.at(-1);
    if (!listed.hasMore || !last) return { kind: "charges", charges };
    startingAfter = last.id;
  }
  return { kind: "too_many", pagesRead: AUDIT_CHARGE_PAGES_MAX };
}

/**
 * Asks the bank one cheap question (an empty page of charges from now on) to tell whether it is reachable.
 * Returns null when it answered, else the reason.
 */
export async function bankUnreachableReason(bank: AuditBankOptions): Promise<string | null> {
  const listed = await listChargesSince(new Date().toISOString(), { ...bank, limit: 1 });
  if (listed.kind === "page") return null;
  if (listed.kind === "unknown") return listed.detail ? `${listed.reason}: ${listed.detail}` : listed.reason;
  return `${listed.status} ${listed.code}`;
}
