"use client";
import { useActionState } from "react";
import { reconcileNowAction, type ReconcileActionState } from "./actions";
import { UtcTime } from "./utc-time";

const COUNTERS = ["examined", "completed", "failed", "redriven", "skipped"] as const;

/** The "Reconcile now" button and the result of the last pass it ran. */
export function ReconcileNow() {
  const [state, action, pending] = useActionState<ReconcileActionState, FormData>(reconcileNowAction, { kind: "idle" });
  return (
    <section className="card" aria-labelledby="reconcile-heading" data-testid="reconcile">
      <h2 id="reconcile-heading">Reconciler</h2>
      <p className="muted">
        One pass: take over top-ups whose lease expired and settle them from the bank; make sure every succeeded bank
        charge has its credited top-up.
      </p>
      <form action={action}>
        <button type="submit" disabled={pending} aria-busy={pending}>
          {pending ? "Reconciling…" : "Reconcile now"}
        </button>
      </form>
      {state.kind === "forbidden" && <p role="alert">Only administrators can run the reconciler.</p>}
      {state.kind === "done" && (
        <div className="reconcile-result" data-testid="reconcile-result" aria-live="polite">
          <p>
            Pass finished at <UtcTime iso={state.finishedAt} />
          </p>
          <dl className="counters">
            {COUNTERS.map((name) => (
              <div key={name}>
                <dt>{name}</dt>
                <dd data-counter={name}>{state.result[name]}</dd>
              </div>
            ))}
          </dl>
          {state.result.databaseUnreachable && (
            <p role="alert">
              The pass stopped in its {state.result.databaseUnreachable.step.replaceAll("_", " ")} step: the database
              cannot be reached ({state.result.databaseUnreachable.reason}). The counts above are what it did until
              then.
            </p>
          )}
          {state.result.errored !== undefined && (
            <p role="alert" data-testid="reconcile-errored">
              {state.result.errored} row(s) failed and were left for the next pass; the rest of the pass went on. Each
              is listed below as row_error with its merchant reference.
            </p>
          )}
          {state.result.bankUnreachable && (
            <p role="alert">
              Bank unreachable ({state.result.bankUnreachable.reason}): {state.result.bankUnreachable.rowsLeft} row(s)
              left for the next pass.
            </p>
          )}
          {state.result.anomalies && (
            <ul className="anomalies">
              {state.result.anomalies.map((anomaly, index) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: a list rendered once from one response, never reordered
                <li key={index}>
                  <strong>{anomaly.kind}</strong> {anomaly.merchantRef ?? ""} {anomaly.chargeId ?? ""}: {anomaly.detail}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}
