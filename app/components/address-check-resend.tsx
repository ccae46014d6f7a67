"use client";
/** The notice's "Send the link again" button and its answer. */
import { useActionState } from "react";
import { sendAddressCheckAction } from "./address-check-actions";

export function AddressCheckResend() {
  const [state, formAction, pending] = useActionState(sendAddressCheckAction, null);
  return (
    <form action={formAction}>
      <button type="submit" disabled={pending} aria-busy={pending}>
        {pending ? "Sending…" : "Send the link again"}
      </button>
      {state && (
        <p role="status" className={state.outcome === "throttled" ? "form-error" : "form-notice"}>
          {state.outcome === "throttled" ? "Too many requests: try again in an hour." : "A new link is on its way."}
        </p>
      )}
    </form>
  );
}
