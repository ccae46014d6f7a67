/** What the wallet page calls each row state: both unfinished states read "pending" to a user. */
export const STATUS_LABEL: Record<string, string> = {
  initiated: "pending",
  processing: "pending",
  succeeded: "succeeded",
  failed: "failed",
};
