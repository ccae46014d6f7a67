"use client";
/**
 * A money form (top-up or payment) driven by a server action. Works before JavaScript loads (a plain POST
 * of the form), and with JavaScript the submit button is disabled and says so while the action runs.
 * A resubmit carries the same server-minted ref id, so the ledger treats it as the same operation.
 */
import { useActionState } from "react";
import { useFormStatus } from "react-dom";
import type { FormState } from "./actions";

interface Props {
  readonly title: string;
  readonly refId: string;
  readonly presets: readonly string[];
  readonly submitLabel: string;
  readonly action: (previous: FormState, formData: FormData) => Promise<FormState>;
  readonly testId: string;
}

function SubmitButton({ label }: { label: string }) {
  const { pending } = useFormStatus();
  return (
    <button type="submit" disabled={pending} aria-busy={pending} data-testid="submit">
      {pending ? "Working…" : label}
    </button>
  );
}

function describe(state: FormState): { ok: boolean; text: string } | null {
  if (!state) return null;
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(state.body) as Record<string, unknown>;
  } catch {
    return { ok: false, text: "Unexpected answer from the server." };
  }
  if (state.status >= 400) return { ok: false, text: String(body.detail ?? body.title ?? "Failed.") };
  const item = (body.topup ?? body.payment) as { status?: string; amount?: number; currency?: string } | undefined;
  const amount = item?.amount !== undefined ? `${(item.amount / 100).toFixed(2)} ${item.currency ?? ""}` : "";
  const what = body.topup ? "Top-up" : "Payment";
  // A top-up's answer is the status when it was accepted (the stored first response); the list below follows
  // the bank's later answer live.
  const outcome =
    item?.status === "succeeded"
      ? "succeeded"
      : item?.status === "failed"
        ? "failed"
        : "sent to the bank, status below";
  return { ok: true, text: `${what} of ${amount}: ${outcome}${state.replayed ? " (already submitted)" : ""}` };
}

export function OperationForm({ title, refId, presets, submitLabel, action, testId }: Props) {
  const [state, formAction] = useActionState(action, null);
  const message = describe(state);
  return (
    <form action={formAction} className="card" data-testid={testId}>
      <h2>{title}</h2>
      <input type="hidden" name="refId" value={refId} />
      <fieldset className="presets">
        <legend>Amount</legend>
        {presets.map((preset, index) => (
          <label key={preset}>
            <input type="radio" name="preset" value={preset} defaultChecked={index === 0} /> {preset}
          </label>
        ))}
      </fieldset>
      <label>
        Other amount <input name="customAmount" inputMode="decimal" placeholder="e.g. 12.50" autoComplete="off" />
      </label>
      <SubmitButton label={submitLabel} />
      <p className="ref">Reference {refId}</p>
      {message && (
        <p role={message.ok ? "status" : "alert"} className={message.ok ? "ok" : "error"} data-testid="result">
          {message.text}
        </p>
      )}
    </form>
  );
}
