"use client";
/** The "forgot password" form: one address; the answer never says whether it has an account. */
import { useActionState, useState } from "react";
import { type ForgotPasswordState, forgotPasswordAction } from "./actions";

function message(state: ForgotPasswordState): { text: string; role: "status" | "alert" } | null {
  if (!state) return null;
  if (state.outcome === "throttled") {
    const minutes = Math.max(1, Math.ceil((state.retryAfterS ?? 3600) / 60));
    return { text: `Too many requests. Wait ${minutes} minutes, then try again.`, role: "alert" };
  }
  return {
    text: `If ${state.email} has a wallet, a link to choose a new password is on its way. It works once, for 1 hour.`,
    role: "status",
  };
}

export function ForgotPasswordForm() {
  const [state, formAction, pending] = useActionState(forgotPasswordAction, null);
  const [email, setEmail] = useState(state?.email ?? "");
  const shown = message(state);
  return (
    <form action={formAction} className="auth-form">
      {shown && (
        <p
          role={shown.role}
          className={shown.role === "alert" ? "form-error" : "form-notice"}
          data-testid="forgot-result"
        >
          {shown.text}
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
      <button type="submit" disabled={pending} aria-busy={pending}>
        {pending ? "Sending…" : "Send me a link"}
      </button>
    </form>
  );
}
