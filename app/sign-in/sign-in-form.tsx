"use client";
/**
 * The sign-in form. Controlled inputs: nothing typed is lost on a failed attempt (with JavaScript the password
 * stays too; without it the server sends the email back, never the password). The page's notice (signed out, or the
 * session ended by a password change elsewhere) shows until the first attempt; then only that attempt's message does.
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

/** Why the visitor is on the sign-in page, when the address says. */
export type SignInNotice = "signed_out" | "password_changed" | "password_reset";

const NOTICES: Record<SignInNotice, string> = {
  signed_out: "You are signed out.",
  password_changed:
    "You were signed out because your password was changed in another browser or device. Sign in with the new password.",
  password_reset: "Your password was changed and every device signed out. Sign in with the new password.",
};

/** Each notice's test id. */
const NOTICE_TEST_IDS: Record<SignInNotice, string> = {
  signed_out: "signed-out",
  password_changed: "session-ended",
  password_reset: "password-reset",
};

export function SignInForm({ notice }: { notice: SignInNotice | null }) {
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
      {notice && !state && (
        <p role="status" className="form-notice" data-testid={NOTICE_TEST_IDS[notice]}>
          {NOTICES[notice]}
        </p>
      )}
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
