"use client";
/** The new password, for a reset link's token (kept in a hidden field). */
import Link from "next/link";
import { useActionState, useState } from "react";
import { type ResetPasswordState, resetPasswordAction } from "./actions";

export function ResetPasswordForm({ token }: { token: string }) {
  const [state, formAction, pending] = useActionState<ResetPasswordState, FormData>(resetPasswordAction, null);
  const [password, setPassword] = useState("");
  return (
    <form action={formAction} className="auth-form" aria-describedby={state ? "reset-error" : "password-rule"}>
      {state?.error === "token" && (
        <p role="alert" id="reset-error" className="form-error">
          This link has expired or was already used. <Link href="/forgot-password">Ask for a new one</Link>.
        </p>
      )}
      {state?.error === "password" && (
        <p role="alert" id="reset-error" className="form-error">
          The password must be 10 to 128 characters long.
        </p>
      )}
      <input type="hidden" name="token" value={token} />
      <label htmlFor="password">New password</label>
      <input
        id="password"
        name="password"
        type="password"
        autoComplete="new-password"
        required
        minLength={10}
        maxLength={128}
        value={password}
        onChange={(event) => setPassword(event.target.value)}
      />
      <p id="password-rule" className="muted">
        10 to 128 characters. Every device will be signed out.
      </p>
      <button type="submit" disabled={pending} aria-busy={pending}>
        {pending ? "Saving…" : "Set the new password"}
      </button>
    </form>
  );
}
