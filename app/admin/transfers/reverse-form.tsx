"use client";
/**
 * The reverse form of one transfer on the admin transfers page (contract section 15.1): the admin writes why, then
 * reverses. The transfer names its reversal, so a double click, a resubmission or a second admin is one reversal (the
 * answer is replayed). The outcome is shown in plain words, never a problem's detail.
 */
import { useActionState } from "react";
import { formatMoney } from "@/lib/money";
import { reverseTransferAction, type ReverseActionState } from "./reverse-action";

/** What the form says after the action answered. */
function outcomeWords(state: Extract<ReverseActionState, { kind: "done" }>, amount: string): string {
  if (state.status === 201)
    return state.replayed
      ? `Already reversed: ${amount} went back to the sender once; nothing moved again.`
      : `Reversed: ${amount} went back to the sender, taken from the recipient (as debt where their balance was short).`;
  let code = "";
  try {
    code = String((JSON.parse(state.body) as { code?: unknown }).code ?? "");
  } catch {
    code = "";
  }
  switch (code) {
    case "idempotency_key_reused":
      return "This transfer was already reversed with another reason; nothing moved again.";
    case "transfer_not_reversible":
      return "This transfer did not go through, so it moved no money: there is nothing to reverse.";
    case "not_found":
      return "No such transfer. Reload the page.";
    case "invalid_request":
      return "Write a reason: up to 500 characters of plain text, with no space at either end. Nothing was reversed.";
    case "request_in_progress":
      return "Another admin's reversal of this transfer is still being made. Reload the page in a few seconds.";
    case "forbidden":
      return "Only admins reverse transfers.";
    default:
      return "Something went wrong. Reload the page and try again.";
  }
}

export function ReverseForm(props: { userId: string; refId: string; amountMinor: number; currency: string }) {
  const [state, action, pending] = useActionState<ReverseActionState, FormData>(reverseTransferAction, {
    kind: "idle",
  });
  const amount = formatMoney(props.amountMinor, props.currency);
  return (
    <form action={action} className="reverse-form" data-testid="reverse-form">
      <input type="hidden" name="userId" value={props.userId} />
      <input type="hidden" name="refId" value={props.refId} />
      <label>
        Reason
        <input name="reason" required maxLength={500} autoComplete="off" />
      </label>
      <button type="submit" disabled={pending}>
        {pending ? "Reversing…" : `Reverse ${amount}`}
      </button>
      {state.kind === "done" && (
        <p role={state.status === 201 ? "status" : "alert"} data-testid="reverse-outcome">
          {outcomeWords(state, amount)}
        </p>
      )}
    </form>
  );
}
