/** A payout's states, in the order the filter offers them (contract section 14). */
export const PAYOUT_STATUSES = ["initiated", "processing", "succeeded", "failed"] as const;
