"use client";
/**
 * The sign-in form. Controlled inputs: nothing typed is lost on a failed attempt (with JavaScript the password
 * stays too; without it the server sends the email back, never the password).
 */
import { useActionState, useRef, useState } from "react";
import { useKeptFormValues } from "../components/use-kept-form-values";
import { type SignInState, signInAction } from "./actions";

/** Minutes for people, rounded up (a throttle's Retry-After is in seconds). */
function minutes(seconds: number): string {
  const value = Math.max(1, Math.ceil(seconds / 60));
  return value === 1 ? "a minute" : `${value} minutes`;
}

function message(state: SignInState): string | null {
  if (!state) return null;
  if (state.error === "throttled") {
    return `Too many failed sign-ins for this email from your network. Wait ${minutes(state.retryAfterS ?? 900)}, then try again.`;
  }
  return "Wrong email or password.";
}

export function SignInForm() {
  const [state, formAction, pending] = useActionState(signInAction, null);
  const [email, setEmail] = useState(state?.email ?? "");
  const [password, setPassword] = useState("");
  const formRef = useRef<HTMLFormElement>(null);
  useKeptFormValues(formRef, { email, password });
  const error = message(state);
  return (
    <form
      ref={formRef}
      action={formAction}
      className="auth-form"
      aria-describedby={error ? "sign-in-error" : undefined}
    >
      {error && (
        <p role="alert" id="sign-in-error" className="form-error">
          {error}
        </p>
      )}
      <label htmlFor="email">Email</label>
      <input
        id="email"
        name="email"
        type="email"
        autoComplete="username"
        required
        maxLength={254}
        value={email}
        onChange={(event) => setEmail(event.target.value)}
      />
      <label htmlFor="password">Password</label>
      <input
        id="password"
        name="password"
        type="password"
        autoComplete="current-password"
        required
        maxLength={128}
        value={password}
        onChange={(event) => setPassword(event.target.value)}
      />
      <button type="submit" disabled={pending} aria-busy={pending}>
        {pending ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
