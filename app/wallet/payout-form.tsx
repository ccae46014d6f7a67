"use client";
/**
 * The withdraw form, driven by ./payout-actions.ts. Works before JavaScript loads (a plain POST; the answer renders
 * what was typed again); with JavaScript the inputs are controlled, so nothing typed is lost on any answer, and the
 * button is disabled while the action runs. A resubmit carries the same server-minted reference, so the ledger treats
 * it as the same withdrawal. The answer is a sentence for people (lib/web/outcome-sentences.ts) that follows the
 * withdrawal: `liveStates` (refreshed by the live updates) turns "processing" into "paid" or "failed" without a reload.
 */
import { useActionState, useId, useRef, useState } from "react";
import { useFormStatus } from "react-dom";
import { moneyInputPattern } from "@/lib/money";
import { amountHint, DESTINATION_FORMAT, describeOutcome, type LiveState } from "@/lib/web/outcome-sentences";
import { useKeptFormValues } from "../components/use-kept-form-values";
import type { PayoutFormState } from "./payout-actions";

interface Props {
  readonly refId: string;
  readonly currency: string;
  /** MAX_AMOUNT_MINOR: the hint's upper bound. */
  readonly maxAmountMinor: number;
  readonly action: (previous: PayoutFormState, formData: FormData) => Promise<PayoutFormState>;
  /** The latest state of the user's recent withdrawals, by reference. */
  readonly liveStates: Readonly<Record<string, LiveState>>;
}

function SubmitButton() {
  const { pending } = useFormStatus();
  return (
    <button type="submit" disabled={pending} aria-busy={pending} data-testid="submit">
      {pending ? "Working…" : "Withdraw"}
    </button>
  );
}

/** The withdrawal the answer is about (a 201's body names it and its state then). */
function answeredPayout(state: PayoutFormState): { refId: string; status: string | undefined } | null {
  if (!state || state.status >= 400) return null;
  try {
    const body = JSON.parse(state.body) as { payout?: { refId?: string; status?: string } };
    return body.payout?.refId ? { refId: body.payout.refId, status: body.payout.status } : null;
  } catch {
    return null;
  }
}

export function PayoutForm({ refId, currency, maxAmountMinor, action, liveStates }: Props) {
  const [state, formAction] = useActionState(action, null);
  const id = useId();
  const [amount, setAmount] = useState(state?.values.amount ?? "");
  const [destination, setDestination] = useState(state?.values.destination ?? "");
  const formRef = useRef<HTMLFormElement>(null);
  useKeptFormValues(formRef, { amount, destination });
  const answered = answeredPayout(state);
  const live = answered ? liveStates[answered.refId] : undefined;
  const sentence = state
    ? describeOutcome(state, { kind: "payout", currency, maxAmountMinor, amountMinor: state.amountMinor }, live)
    : null;
  const amountHintId = `${id}-amount-hint`;
  const accountHintId = `${id}-account-hint`;
  return (
    <form ref={formRef} action={formAction} className="money-form payout-form" data-testid="payout-form">
      <input type="hidden" name="refId" value={refId} />
      <label className="field">
        <span>Amount</span>
        <input
          name="amount"
          inputMode="decimal"
          autoComplete="off"
          required
          placeholder="12.50"
          pattern={moneyInputPattern(currency)}
          aria-describedby={amountHintId}
          value={amount}
          onChange={(event) => setAmount(event.target.value)}
        />
      </label>
      <p id={amountHintId} className="hint">
        {amountHint({ currency, maxAmountMinor })}
      </p>
      <label className="field">
        <span>Account number</span>
        <input
          name="destination"
          inputMode="numeric"
          autoComplete="off"
          required
          maxLength={20}
          aria-describedby={accountHintId}
          value={destination}
          onChange={(event) => setDestination(event.target.value)}
        />
      </label>
      <p id={accountHintId} className="hint">
        Your bank account number: {DESTINATION_FORMAT}.
      </p>
      <SubmitButton />
      {sentence && (
        <p
          role={sentence.tone === "error" ? "alert" : "status"}
          className={`result ${sentence.tone}`}
          data-testid="result"
          data-status={live?.status ?? answered?.status}
        >
          {sentence.text}
        </p>
      )}
    </form>
  );
}
