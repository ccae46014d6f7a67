"use client";

import { useActionState, useEffect, useRef, useState } from "react";
import { CopyButton } from "../../components/copy-button";
import { useKeptFormValues } from "../../components/use-kept-form-values";

/** What the create-token action answers; `created` carries the token's only copy, shown once. */
export type CreateTokenState =
  | { kind: "idle" }
  | { kind: "created"; token: string; prefix: string; name: string }
  | { kind: "invalid"; message: string };

const INITIAL_STATE: CreateTokenState = { kind: "idle" };

/**
 * The "create a token" form: name and expiry side by side on a wide screen, stacked on a phone. It uses
 * `useActionState` so the new token can be shown in the action's answer without ever putting it in a URL or a
 * cookie; React renders that answer on the server too, so the form also works without JavaScript. The new token
 * has a copy button. A refused name stays in the field; a created token empties it.
 */
export function CreateTokenForm({
  action,
  expiryDays,
  nameMaxLength,
}: {
  action: (state: CreateTokenState, formData: FormData) => Promise<CreateTokenState>;
  /** The expiry choices in days, besides "never". */
  expiryDays: number[];
  nameMaxLength: number;
}) {
  const [state, formAction, pending] = useActionState(action, INITIAL_STATE);
  const [name, setName] = useState("");
  const [expiry, setExpiry] = useState("never");
  const formRef = useRef<HTMLFormElement>(null);
  useKeptFormValues(formRef, { name, expiry });
  // A created token empties the name, so a second click does not make a second token of the same name by mistake.
  useEffect(() => {
    if (state.kind === "created") setName("");
  }, [state]);
  return (
    <section className="card token-create" aria-labelledby="token-create-heading">
      <h2 id="token-create-heading">Create a token</h2>
      {state.kind === "created" && (
        <div className="token-created" role="status">
          <p>
            Token <strong>{state.name}</strong> created. Copy it now: it will not be shown again.
          </p>
          <div className="token-copy">
            <code className="token-value" id="new-token-value">
              {state.token}
            </code>
            <CopyButton value={state.token} label="Copy the new token" selectId="new-token-value" />
          </div>
        </div>
      )}
      {state.kind === "invalid" && (
        <p role="alert" className="form-error">
          {state.message}
        </p>
      )}
      <form ref={formRef} action={formAction} className="token-form">
        <div className="field">
          <label htmlFor="token-name">Name</label>
          <input
            id="token-name"
            name="name"
            type="text"
            required
            maxLength={nameMaxLength}
            autoComplete="off"
            value={name}
            onChange={(event) => setName(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="token-expiry">Expires</label>
          <select id="token-expiry" name="expiry" value={expiry} onChange={(event) => setExpiry(event.target.value)}>
            <option value="never">never</option>
            {expiryDays.map((days) => (
              <option key={days} value={String(days)}>
                in {days} days
              </option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={pending} aria-busy={pending}>
          Create token
        </button>
      </form>
    </section>
  );
}
