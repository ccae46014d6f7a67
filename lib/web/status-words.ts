/**
 * The one status vocabulary of the pages. A row's state has the same name on the wallet page, on the admin page
 * and in the API (contract section 2: `initiated`, `processing`, `succeeded`, `failed`); a page writes it
 * capitalised, with a short meaning for people beside it. No page says "pending" for a state the API calls
 * otherwise.
 */
import type { EntryStatus } from "../ledger";

export interface StatusWords {
  /** The state's name as the API spells it, capitalised. */
  readonly label: string;
  /** What it means for the money, in plain words. */
  readonly meaning: string;
}

export const STATUS_WORDS: Readonly<Record<EntryStatus, StatusWords>> = {
  initiated: { label: "Initiated", meaning: "not sent to the bank yet" },
  processing: { label: "Processing", meaning: "waiting for the bank" },
  succeeded: { label: "Succeeded", meaning: "done" },
  failed: { label: "Failed", meaning: "no money moved" },
};

/** True for the states a row leaves again (`initiated`, `processing`): the page keeps following them. */
export function isUnfinished(status: EntryStatus): boolean {
  return status === "initiated" || status === "processing";
}
