"use client";
/**
 * The refund form of the admin top-up page (contract section 11). Its refund id is minted by the server when the page
 * renders, so a double click or a resubmission of the same form is one refund (it replays); a new page render is a
 * new refund. The outcome is shown in plain words (lib/web/outcome-sentences.ts), never a problem's detail.
 */
import { useActionState } from "react";
import { describeOutcome } from "@/lib/web/outcome-sentences";
import { refundTopupAction, type RefundActionState } from "./refund-action";

export function RefundForm(props: {
  userId: string;
  topupRefId: string;
  refundId: string;
  currency: string;
  maxAmountMinor: number;
  inputPattern: string;
}) {
  const [state, action, pending] = useActionState<RefundActionState, FormData>(refundTopupAction, { kind: "idle" });
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
      <label>
        Amount to refund ({props.currency}){" "}
        <input name="amount" inputMode="decimal" pattern={props.inputPattern} required autoComplete="off" />
      </label>{" "}
      <button type="submit" disabled={pending}>
        {pending ? "Refunding…" : "Refund"}
      </button>
      {sentence && (
        <p role={sentence.tone === "error" ? "alert" : "status"} data-testid="refund-outcome" data-tone={sentence.tone}>
          {sentence.text}
        </p>
      )}
    </form>
  );
}
