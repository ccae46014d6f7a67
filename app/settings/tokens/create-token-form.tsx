"use client";

import { useActionState } from "react";

/** What the create-token action answers; `created` carries the token's only copy, shown once. */
export type CreateTokenState =
  | { kind: "idle" }
  | { kind: "created"; token: string; prefix: string; name: string }
  | { kind: "invalid"; message: string };

const INITIAL_STATE: CreateTokenState = { kind: "idle" };

/**
 * The "create a token" form. It uses `useActionState` so the new token can be shown in the action's answer
 * without ever putting it in a URL or a cookie; React renders that answer on the server too, so the form also
 * works without JavaScript.
 */
export function CreateTokenForm({
  action,
  expiryDays,
}: {
  action: (state: CreateTokenState, formData: FormData) => Promise<CreateTokenState>;
  /** The expiry choices in days, besides "never". */
  expiryDays: number[];
}) {
  const [state, formAction, pending] = useActionState(action, INITIAL_STATE);
  return (
    <section className="token-create" aria-labelledby="token-create-heading">
      <h2 id="token-create-heading">Create a token</h2>
      {state.kind === "created" && (
        <div className="token-created" role="status">
          <p>
            Token <strong>{state.name}</strong> created. Copy it now: it will not be shown again.
          </p>
          <p>
            <code className="token-value">{state.token}</code>
          </p>
        </div>
      )}
      {state.kind === "invalid" && (
        <p role="alert" className="form-error">
          {state.message}
        </p>
      )}
      <form action={formAction} className="token-form">
        <label htmlFor="token-name">Name</label>
        <input id="token-name" name="name" type="text" required maxLength={100} autoComplete="off" />
        <label htmlFor="token-expiry">Expires</label>
        <select id="token-expiry" name="expiry" defaultValue="never">
          <option value="never">never</option>
          {expiryDays.map((days) => (
            <option key={days} value={String(days)}>
              in {days} days
            </option>
          ))}
        </select>
        <button type="submit" disabled={pending}>
          Create token
        </button>
      </form>
    </section>
  );
}
