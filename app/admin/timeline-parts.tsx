/**
 * The parts every admin timeline page shares (a top-up's, a payout's): the path segment decoded once, a time with
 * seconds, the audit trail's transitions, and the row's lease, failure and times. Rendered on the server.
 */
import type { TimelineTransition } from "@/lib/admin/get-topup-timeline";
import { describeFailure } from "@/lib/web/failure-reasons";
import { STATUS_WORDS } from "@/lib/web/status-words";
import { UtcTime } from "./utc-time";

/** Decodes a path segment once; a malformed escape is kept as it is (it then matches no row: "not found"). */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** A time on a timeline page, with seconds; "—" for none. */
export function At({ iso }: { iso: string | null }) {
  return iso ? <UtcTime iso={iso} /> : <>—</>;
}

/** A state name of the audit trail, as the pages write it ("∅" before the claim). */
export function stateName(status: string | null): string {
  if (status === null) return "∅";
  return STATUS_WORDS[status as keyof typeof STATUS_WORDS]?.label ?? status;
}

/** The audit trail of one row: who moved it, from which state to which, with which fencing token, and why. */
export function Transitions({ transitions, testId }: { transitions: TimelineTransition[]; testId: string }) {
  return (
    <ol className="timeline" data-testid={testId}>
      {transitions.map((t, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a list rendered once from one response, never reordered
        <li key={index} data-actor={t.actor} data-to={t.to}>
          <At iso={t.at} /> —{" "}
          {t.from === t.to ? (
            <>lease taken over ({stateName(t.to)})</>
          ) : (
            <>
              {stateName(t.from)} → {stateName(t.to)}
            </>
          )}{" "}
          by <strong>{t.actor}</strong> (fencing token {t.fencingToken}){t.detail ? `: ${t.detail}` : ""}
        </li>
      ))}
    </ol>
  );
}

/** The row's lease, failure and times, as the last facts of a timeline's `<dl className="facts">`. */
export function EntryStateFacts({
  row,
}: {
  row: {
    leaseOwner: string | null;
    leaseExpiresAt: string | null;
    failureReason: string | null;
    createdAt: string;
    updatedAt: string;
  };
}) {
  return (
    <>
      <dt>Lease</dt>
      <dd>
        {row.leaseOwner ? (
          <>
            <span className="mono clip-inline" title={row.leaseOwner}>
              {row.leaseOwner}
            </span>{" "}
            until <At iso={row.leaseExpiresAt} />
          </>
        ) : (
          "none (finished)"
        )}
      </dd>
      {row.failureReason && (
        <>
          <dt>Failure</dt>
          <dd>
            {describeFailure(row.failureReason)} (<code>{row.failureReason}</code>)
          </dd>
        </>
      )}
      <dt>Created</dt>
      <dd>
        <At iso={row.createdAt} />
      </dd>
      <dt>Updated</dt>
      <dd>
        <At iso={row.updatedAt} />
      </dd>
    </>
  );
}
