import { CopyButton } from "../components/copy-button";

/**
 * A bank charge id on the admin pages: never broken mid-string on a wide screen, with a copy button; `none` (a
 * muted text) when the row has no charge.
 */
export function ChargeId({
  chargeId,
  none,
  what = "charge id",
}: {
  chargeId: string | null;
  none: string;
  /** What the id is, for the copy button's name ("payout id" on the payout pages). */
  what?: string;
}) {
  if (!chargeId) return <span className="muted">{none}</span>;
  return (
    <span className="charge">
      <code className="charge-id" data-testid="charge-id" title={chargeId}>
        {chargeId}
      </code>
      <CopyButton value={chargeId} label={`Copy ${what} ${chargeId}`} compact />
    </span>
  );
}
