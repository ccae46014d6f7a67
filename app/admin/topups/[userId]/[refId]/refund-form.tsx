"use client";
/**
 * The refund form of the admin top-up page (contract section 11). It says what is left to refund of the top-up, and
 * asks to confirm the amount before anything is sent ("Review refund", then "Confirm refund" or "Change amount"; both
 * steps are the server action's, so the form works with the keyboard and without JavaScript). Its refund id is minted
 * by the server when the page renders, so a double click or a resubmission of the same form is one refund (it
 * replays); a new page render is a new refund. The outcome is shown in plain words (lib/web/outcome-sentences.ts),
 * never a problem's detail.
 */
import { useActionState, useEffect, useRef } from "react";
import { formatMoney } from "@/lib/money";
import { describeOutcome } from "@/lib/web/outcome-sentences";
import { refundTopupAction, type RefundActionState } from "./refund-action";

export function RefundForm(props: {
  userId: string;
  topupRefId: string;
  refundId: string;
  currency: string;
  maxAmountMinor: number;
  inputPattern: string;
  /** The top-up's amount and what is left to refund of it now (0 while a dispute is open or lost), minor units. */
  topupAmountMinor: number;
  refundableMinor: number;
  /** Whose wallet the refund comes out of (their email), for the confirmation. */
  userLabel: string;
}) {
  const [state, action, pending] = useActionState<RefundActionState, FormData>(refundTopupAction, { kind: "idle" });
  const confirmRef = useRef<HTMLFieldSetElement>(null);
  // The confirmation replaces the amount field: focus moves to it, so a keyboard or screen reader user lands on
  // the question and its buttons.
  useEffect(() => {
    if (state.kind === "review") confirmRef.current?.focus();
  }, [state]);
  const money = (amountMinor: number) => formatMoney(amountMinor, props.currency);
  const sentence =
    state.kind === "done"
      ? describeOutcome(state, {
          kind: "refund",
          currency: props.currency,
          maxAmountMinor: props.maxAmountMinor,
          amountMinor: state.amountMinor,
        })
      : null;
  return (
    <form action={action} className="refund-form" data-testid="refund-form">
      <input type="hidden" name="userId" value={props.userId} />
      <input type="hidden" name="topupRefId" value={props.topupRefId} />
      <input type="hidden" name="refundId" value={props.refundId} />
      <p data-testid="refundable">
        Refundable: <strong>{money(props.refundableMinor)}</strong> of {money(props.topupAmountMinor)}
      </p>
      {state.kind === "review" ? (
        <fieldset className="refund-confirm" data-testid="refund-confirm" ref={confirmRef} tabIndex={-1}>
          <legend>Confirm the refund</legend>
          <input type="hidden" name="amount" value={state.amountText} />
          <p>
            Refund <strong>{money(state.amountMinor)}</strong> of this top-up to {props.userLabel}? It is taken from
            their wallet and paid back through the bank, and cannot be undone.
          </p>
          {state.amountMinor > props.refundableMinor && (
            <p className="error">
              That is more than the {money(props.refundableMinor)} left to refund: the refund will be refused.
            </p>
          )}
          <div className="refund-buttons">
            <button type="submit" name="step" value="confirm" disabled={pending}>
              {pending ? "Refunding…" : "Confirm refund"}
            </button>
            <button type="submit" name="step" value="edit" className="secondary" disabled={pending}>
              Change amount
            </button>
          </div>
        </fieldset>
      ) : (
        <>
          <label>
            Amount to refund ({props.currency})
            <input name="amount" inputMode="decimal" pattern={props.inputPattern} required autoComplete="off" />
          </label>
          <button type="submit" name="step" value="review" disabled={pending}>
            Review refund
          </button>
        </>
      )}
      {sentence && (
        <p role={sentence.tone === "error" ? "alert" : "status"} data-testid="refund-outcome" data-tone={sentence.tone}>
          {sentence.text}
        </p>
      )}
    </form>
  );
}
