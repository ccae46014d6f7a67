/**
 * A row's state as the pages show it: the API's name for it (lib/web/status-words.ts) in a coloured badge, and
 * for a failed row the reason in plain words. Used by the wallet and the admin pages alike.
 */
import type { EntryStatus } from "@/lib/ledger";
import { describeFailure } from "@/lib/web/failure-reasons";
import { STATUS_WORDS } from "@/lib/web/status-words";

export function StatusBadge({
  status,
  failureReason = null,
  extra,
}: {
  status: EntryStatus;
  failureReason?: string | null;
  /** A qualifier after the name, e.g. "stuck" on the admin page. */
  extra?: string;
}) {
  const words = STATUS_WORDS[status];
  return (
    <span className="status-cell">
      <span className={`badge ${status}`} title={words.meaning}>
        {words.label}
        {extra ? ` · ${extra}` : ""}
      </span>
      {status === "failed" && failureReason && <span className="reason">{describeFailure(failureReason)}</span>}
    </span>
  );
}
