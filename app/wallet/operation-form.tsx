"use client";
/**
 * A money form (top-up, payment or transfer) driven by a server action. Works before JavaScript loads (a plain POST of the
 * form; the answer renders what was typed again), and with JavaScript the inputs are controlled, so nothing typed is
 * lost on any answer, and the submit button is disabled and says so while the action runs. A resubmit carries the
 * same server-minted ref id, so the ledger treats it as the same operation.
 *
 * The answer is a sentence for people (lib/web/outcome-sentences.ts). A top-up's sentence follows the top-up: the
 * page hands in the latest state of its recent top-ups (`liveTopups`, refreshed by the live updates), so "processing"
 * turns into "succeeded" or "failed" without a reload.
 */
import { useActionState, useId, useRef, useState } from "react";
import { useFormStatus } from "react-dom";
import { formatMoney, moneyInputPattern } from "@/lib/money";
import { amountHint, describeOutcome, type LiveState, type OperationKind } from "@/lib/web/outcome-sentences";
import { useKeptFormValues } from "../components/use-kept-form-values";
import type { MoneyFormState } from "./actions";

interface Props {
  readonly kind: Extract<OperationKind, "topup" | "payment" | "transfer">;
  readonly title: string;
  readonly refId: string;
  /** The offered amounts in minor units, the first one chosen by default. */
  readonly presetsMinor: readonly number[];
  readonly currency: string;
  /** MAX_AMOUNT_MINOR: the hint's upper bound. */
  readonly maxAmountMinor: number;
  readonly submitLabel: string;
  readonly action: (previous: MoneyFormState, formData: FormData) => Promise<MoneyFormState>;
  readonly testId: string;
  /** The latest state of the user's recent rows of this kind, by ref id (top-ups: followed live). */
  readonly liveStates?: Readonly<Record<string, LiveState>>;
  /**
   * The pay form's payee field: the merchants offered by name (lib/payments/payees.ts), any other name typed as free
   * text, and an optional note (docs/decisions/055). Absent on the top-up form.
   */
  readonly payees?: { readonly names: readonly string[]; readonly payeeMax: number; readonly noteMax: number };
  /**
   * The send form's fields: the recipient's email address (the one they sign in with) and an optional note (contract
   * section 15). Absent on the other forms.
   */
  readonly recipient?: { readonly addressMax: number; readonly noteMax: number };
}

function SubmitButton({ label }: { label: string }) {
  const { pending } = useFormStatus();
  return (
    <button type="submit" disabled={pending} aria-busy={pending} data-testid="submit">
      {pending ? "Working…" : label}
    </button>
  );
}

type Row = { refId?: string; orderId?: string; status?: string };

/** The row the answer is about (a 201's body names it and its state then), to follow its state. */
function rowOf(state: MoneyFormState): { refId: string; status: string | undefined } | null {
  if (!state || state.status >= 400) return null;
  try {
    const body = JSON.parse(state.body) as { topup?: Row; payment?: Row; transfer?: Row };
    const row = body.topup ?? body.payment ?? body.transfer;
    const refId = row?.refId ?? row?.orderId;
    return refId ? { refId, status: row?.status } : null;
  } catch {
    return null;
  }
}

export function OperationForm({
  kind,
  title,
  refId,
  presetsMinor,
  currency,
  maxAmountMinor,
  submitLabel,
  action,
  testId,
  liveStates,
  payees,
  recipient,
}: Props) {
  const [state, formAction] = useActionState(action, null);
  const id = useId();
  const [preset, setPreset] = useState(state?.values.preset || String(presetsMinor[0] ?? "other"));
  const [customAmount, setCustomAmount] = useState(state?.values.customAmount ?? "");
  const [payee, setPayee] = useState(state?.values.payee ?? "");
  const [note, setNote] = useState(state?.values.note ?? "");
  const [to, setTo] = useState(state?.values.to ?? "");
  const formRef = useRef<HTMLFormElement>(null);
  useKeptFormValues(
    formRef,
    payees
      ? { preset, customAmount, payee, note }
      : recipient
        ? { preset, customAmount, to, note }
        : { preset, customAmount },
  );
  const answered = rowOf(state);
  const live = answered ? liveStates?.[answered.refId] : undefined;
  const sentence = state
    ? describeOutcome(state, { kind, currency, maxAmountMinor, amountMinor: state.amountMinor }, live)
    : null;
  const hintId = `${id}-hint`;
  return (
    <form ref={formRef} action={formAction} className="card money-form" data-testid={testId}>
      <h2>{title}</h2>
      <input type="hidden" name="refId" value={refId} />
      {payees && (
        <>
          <label className="field">
            <span>Pay to</span>
            <input
              name="payee"
              list={`${id}-payees`}
              required
              maxLength={payees.payeeMax}
              autoComplete="off"
              placeholder="A merchant or an order"
              value={payee}
              onChange={(event) => setPayee(event.target.value)}
            />
          </label>
          <datalist id={`${id}-payees`}>
            {payees.names.map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
          <label className="field">
            <span>Note (optional)</span>
            <input
              name="note"
              maxLength={payees.noteMax}
              autoComplete="off"
              value={note}
              onChange={(event) => setNote(event.target.value)}
            />
          </label>
        </>
      )}
      {recipient && (
        <>
          <label className="field">
            <span>Send to (their email address)</span>
            <input
              name="to"
              type="email"
              required
              maxLength={recipient.addressMax}
              autoComplete="off"
              placeholder="bo@example.com"
              value={to}
              onChange={(event) => setTo(event.target.value)}
            />
          </label>
          <label className="field">
            <span>Note (optional)</span>
            <input
              name="note"
              maxLength={recipient.noteMax}
              autoComplete="off"
              value={note}
              onChange={(event) => setNote(event.target.value)}
            />
          </label>
        </>
      )}
      <fieldset className="presets">
        <legend>Amount</legend>
        {presetsMinor.map((amountMinor) => (
          <label key={amountMinor} className="choice">
            <input
              type="radio"
              name="preset"
              value={String(amountMinor)}
              checked={preset === String(amountMinor)}
              onChange={() => {
                setPreset(String(amountMinor));
                setCustomAmount("");
              }}
            />{" "}
            {formatMoney(amountMinor, currency)}
          </label>
        ))}
        <label className="choice">
          <input
            type="radio"
            name="preset"
            value="other"
            checked={preset === "other"}
            onChange={() => setPreset("other")}
          />{" "}
          Other
        </label>
      </fieldset>
      <label className="field">
        <span>Other amount</span>
        <input
          name="customAmount"
          inputMode="decimal"
          autoComplete="off"
          placeholder="12.50"
          pattern={moneyInputPattern(currency)}
          aria-describedby={hintId}
          value={customAmount}
          onChange={(event) => {
            setCustomAmount(event.target.value);
            setPreset("other");
          }}
        />
      </label>
      <p id={hintId} className="hint">
        {amountHint({ currency, maxAmountMinor })}
      </p>
      <SubmitButton label={submitLabel} />
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
