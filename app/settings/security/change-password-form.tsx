"use client";
/**
 * The change-password form. Controlled inputs: a refused change (wrong current password, a new one outside the
 * length rule) keeps what was typed; a done one redirects (the page then says so, with empty fields). The new
 * password's field enforces the length its hint states.
 */
import { useActionState, useRef, useState } from "react";
import { useKeptFormValues } from "../../components/use-kept-form-values";
import { type ChangePasswordState, changePasswordAction } from "./actions";

export function ChangePasswordForm({ passwordMin, passwordMax }: { passwordMin: number; passwordMax: number }) {
  const [state, formAction, pending] = useActionState(changePasswordAction, null);
  const [currentPassword, setCurrentPassword] = useState("");
  const [newPassword, setNewPassword] = useState("");
  // Unticked at first: a password change signs out the API tokens too unless the user chooses to keep them
  // (contract section 9).
  const [keepApiTokens, setKeepApiTokens] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);
  useKeptFormValues(formRef, { currentPassword, newPassword, keepApiTokens });
  const messages: Record<NonNullable<ChangePasswordState>["result"], string> = {
    wrong: "The current password is not right.",
    invalid: `Use a new password of ${passwordMin} to ${passwordMax} characters.`,
    throttled: "Too many wrong passwords. Wait 15 minutes, then try again.",
  };
  return (
    <form ref={formRef} action={formAction} className="auth-form">
      {state && (
        <p role="alert" className="form-error">
          {messages[state.result]}
        </p>
      )}
      <label htmlFor="current-password">Current password</label>
      <input
        id="current-password"
        name="currentPassword"
        type="password"
        autoComplete="current-password"
        required
        maxLength={passwordMax}
        value={currentPassword}
        onChange={(event) => setCurrentPassword(event.target.value)}
      />
      <label htmlFor="new-password">New password</label>
      <input
        id="new-password"
        name="newPassword"
        type="password"
        autoComplete="new-password"
        minLength={passwordMin}
        maxLength={passwordMax}
        required
        aria-describedby="new-password-hint"
        value={newPassword}
        onChange={(event) => setNewPassword(event.target.value)}
      />
      <p id="new-password-hint" className="hint">
        {passwordMin} to {passwordMax} characters.
      </p>
      <label className="checkbox">
        <input
          type="checkbox"
          name="keepApiTokens"
          checked={keepApiTokens}
          onChange={(event) => setKeepApiTokens(event.target.checked)}
        />{" "}
        Keep my API tokens working
      </label>
      <button type="submit" disabled={pending} aria-busy={pending}>
        {pending ? "Changing…" : "Change password"}
      </button>
    </form>
  );
}
