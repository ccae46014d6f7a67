"use client";
/**
 * The sign-up form. Controlled inputs: nothing typed is lost on a refusal (with JavaScript the password stays too;
 * without it the server sends the email back, never the password). The password field enforces the length its hint
 * states (`minLength`/`maxLength`), and the server checks the same rule (lib/auth/credential-fields.ts).
 */
import { useActionState, useRef, useState } from "react";
import { useKeptFormValues } from "../components/use-kept-form-values";
import { type SignUpState, signUpAction } from "./actions";

export function SignUpForm({ passwordMin, passwordMax }: { passwordMin: number; passwordMax: number }) {
  const [state, formAction, pending] = useActionState(signUpAction, null);
  const [email, setEmail] = useState(state?.email ?? "");
  const [password, setPassword] = useState("");
  const formRef = useRef<HTMLFormElement>(null);
  useKeptFormValues(formRef, { email, password });
  const messages: Record<NonNullable<SignUpState>["error"], string> = {
    email: "Enter a valid email address.",
    password: `Use a password of ${passwordMin} to ${passwordMax} characters.`,
    taken: "An account with this email already exists. Sign in instead.",
    throttled: "Too many accounts were created from your network in the last hour. Try again later.",
  };
  const error = state ? messages[state.error] : null;
  return (
    <form ref={formRef} action={formAction} className="auth-form">
      {error && (
        <p role="alert" className="form-error" data-testid="sign-up-error">
          {error}
        </p>
      )}
      <label htmlFor="email">Email</label>
      <input
        id="email"
        name="email"
        type="email"
        autoComplete="email"
        required
        maxLength={254}
        value={email}
        aria-invalid={state?.error === "email" || state?.error === "taken" ? true : undefined}
        onChange={(event) => setEmail(event.target.value)}
      />
      <label htmlFor="password">Password</label>
      <input
        id="password"
        name="password"
        type="password"
        autoComplete="new-password"
        required
        minLength={passwordMin}
        maxLength={passwordMax}
        aria-describedby="password-hint"
        aria-invalid={state?.error === "password" ? true : undefined}
        value={password}
        onChange={(event) => setPassword(event.target.value)}
      />
      <p id="password-hint" className="hint">
        {passwordMin} to {passwordMax} characters.
      </p>
      <button type="submit" disabled={pending} aria-busy={pending}>
        {pending ? "Creating…" : "Create account"}
      </button>
    </form>
  );
}
