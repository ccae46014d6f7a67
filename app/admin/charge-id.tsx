import { CopyButton } from "../components/copy-button";

/**
 * A bank charge id on the admin pages: never broken mid-string on a wide screen, with a copy button; `none` (a
 * muted text) when the row has no charge.
 */
export function ChargeId({ chargeId, none }: { chargeId: string | null; none: string }) {
  if (!chargeId) return <span className="muted">{none}</span>;
  return (
    <span className="charge">
      <code className="charge-id" data-testid="charge-id" title={chargeId}>
        {chargeId}
      </code>
      <CopyButton value={chargeId} label={`Copy charge id ${chargeId}`} compact />
    </span>
  );
}
