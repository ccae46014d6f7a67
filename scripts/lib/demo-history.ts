/**
 * The demo user's history, so that `npm run demo` (and `npm run dev`) open on a wallet with something of every kind
 * in it, and the admin page on top-ups with webhook deliveries, a refund, a chargeback and a payout. Everything goes
 * through the running app's own API with the demo accounts' sessions, as a person or a client would send it (the
 * claim, the bank, its webhooks and the reconciler do the rest), never by writing rows.
 *
 * Idempotent: every operation has a fixed reference (`demo-...`), so a second run replays the stored answers and moves
 * no money again; the one operation whose key changes with the day (a reward: one per ad per local day) is sent only
 * while the demo user has no reward yet.
 */

/** An account of the demo stack (scripts/lib/local-stack.ts `DEMO_USERS`). */
export interface DemoAccount {
  readonly email: string;
  readonly password: string;
}

/**
 * How long to wait for the bank's webhook to settle the first top-up before paying from it, in ms. The sandbox sends
 * it `BANK_WEBHOOK_DELAY_MS` (200 ms) after the charge; `next dev` compiles the webhook route on its first request,
 * tens of seconds on a loaded 2-core machine.
 */
const SETTLE_WAIT_MS = 90_000;
/** Between two reads of the top-up while waiting for it to settle, in ms. */
const SETTLE_POLL_MS = 250;

/** Top-ups by their sandbox switch (docs/bank-sandbox.md): one plain, its webhook delivered three times, one
 * declined, and one the cardholder disputes and loses (a chargeback). Amounts in minor units (USD cents). */
const DEMO_TOPUPS = [
  { refId: "demo-topup-1", amount: 5000 },
  { refId: "sbx-dup-demo-topup-2", amount: 2500 },
  { refId: "sbx-decline-demo-topup-3", amount: 1234 },
  { refId: "sbx-dispute-demo-topup-4", amount: 1000 },
] as const;

/** A valid sandbox account number (10 digits, Luhn; docs/bank-sandbox.md, Payouts): the demo's withdrawals go there. */
const DEMO_DESTINATION = "4000000002";

/** What the demo asks of the app: one HTTP call with a session, answering status and JSON body. */
type Call = (method: "GET" | "POST", path: string, body?: unknown) => Promise<{ status: number; body: unknown }>;

/**
 * Signs `account` in through better-auth's HTTP endpoint and returns a caller that sends its session cookie (and the
 * app's own Origin, as the pages do: cookie-authenticated changes must be same-origin, contract section 9).
 *
 * @throws when the sign-in is refused (the account is missing or the password differs).
 */
async function signedInCaller(appUrl: string, account: DemoAccount): Promise<Call> {
  const origin = new URL(appUrl).origin;
  const signIn = await fetch(`${appUrl}/api/auth/sign-in/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin },
    body: JSON.stringify({ email: account.email, password: account.password }),
  });
  if (!signIn.ok) throw new Error(`demo history: sign-in of ${account.email} answered ${signIn.status}`);
  const cookie = signIn.headers
    .getSetCookie()
    .map((line) => line.split(";")[0])
    .join("; ");
  return async (method, path, body) => {
    const response = await fetch(`${appUrl}${path}`, {
      method,
      headers: { cookie, origin, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json().catch(() => null) };
  };
}

/** Waits until the user's top-up `refId` has a final state; returns it ("succeeded", "failed"), or null on time-out. */
async function settledStatus(call: Call, refId: string): Promise<string | null> {
  const deadline = Date.now() + SETTLE_WAIT_MS;
  while (Date.now() < deadline) {
    const { body } = await call("GET", `/api/v1/topups/${encodeURIComponent(refId)}`);
    const status = (body as { topup?: { status?: string } } | null)?.topup?.status;
    if (status === "succeeded" || status === "failed") return status;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
  }
  return null;
}

/**
 * Gives the demo user a history through the app at `appUrl`: four top-ups (one plain, one whose webhook the bank
 * delivers three times, one declined, one disputed and lost: a chargeback), a payment, a payment refused for
 * insufficient funds, a reward, a withdrawal, money sent to the admin, and a refund made by the admin. Safe to run
 * again (see the module's comment).
 *
 * @param appUrl the running app (`APP_URL`).
 * @param accounts.user, accounts.admin the demo accounts, already created.
 * @returns one line per operation for the demo's output ("top-up demo-topup-1: 201"; a replay answers the same).
 * @throws when a sign-in is refused or the app cannot be reached; an operation the app refuses is reported in the
 *   returned lines, not thrown.
 */
export async function seedDemoHistory(
  appUrl: string,
  accounts: { user: DemoAccount; admin: DemoAccount },
): Promise<string[]> {
  const lines: string[] = [];
  const user = await signedInCaller(appUrl, accounts.user);
  for (const topup of DEMO_TOPUPS) {
    const { status } = await user("POST", "/api/v1/topups", topup);
    lines.push(`top-up ${topup.refId}: ${status}`);
  }
  const first = DEMO_TOPUPS[0];
  if ((await settledStatus(user, first.refId)) !== "succeeded") {
    lines.push(`top-up ${first.refId} not settled yet: payment, reward and refund left for the next run`);
    return lines;
  }
  const payment = await user("POST", "/api/v1/payments", { orderId: "demo-order-1", amount: 999 });
  lines.push(`payment demo-order-1: ${payment.status}`);
  // More than the balance: refused with 402, and that refusal is stored and replayed like any outcome.
  const refused = await user("POST", "/api/v1/payments", { orderId: "demo-order-2", amount: 1_000_000 });
  lines.push(`payment demo-order-2 (more than the balance): ${refused.status}`);
  const entries = await user("GET", "/api/v1/entries?limit=100");
  const hasReward = ((entries.body as { entries?: { type: string }[] } | null)?.entries ?? []).some(
    (entry) => entry.type === "reward",
  );
  if (!hasReward) lines.push(`reward ad-a: ${(await user("POST", "/api/v1/rewards", { adId: "ad-a" })).status}`);
  // Money out and between people (contract sections 14 and 15): a withdrawal to a sandbox account, and money sent to
  // the admin, whose wallet then shows who sent it.
  const payout = await user("POST", "/api/v1/payouts", {
    refId: "demo-payout-1",
    amount: 700,
    destination: DEMO_DESTINATION,
  });
  lines.push(`withdrawal demo-payout-1: ${payout.status}`);
  const transfer = await user("POST", "/api/v1/transfers", {
    refId: "demo-transfer-1",
    to: accounts.admin.email,
    amount: 300,
    note: "Thanks for the refund",
  });
  lines.push(`transfer demo-transfer-1 to ${accounts.admin.email}: ${transfer.status}`);

  const admin = await signedInCaller(appUrl, accounts.admin);
  const userId = await userIdOf(admin, accounts.user.email);
  if (userId) {
    const refund = await admin(
      "POST",
      `/api/v1/admin/topups/${encodeURIComponent(userId)}/${encodeURIComponent(first.refId)}/refunds`,
      { refundId: "demo-refund-1", amount: 500 },
    );
    lines.push(`refund demo-refund-1 of ${first.refId}: ${refund.status}`);
  }
  return lines;
}

/** The user id of `email`, read from the admin list of their top-ups (the API names users by email there). */
async function userIdOf(admin: Call, email: string): Promise<string | null> {
  const { body } = await admin("GET", `/api/v1/admin/topups?user=${encodeURIComponent(email)}&limit=1`);
  return (body as { topups?: { userId?: string }[] } | null)?.topups?.[0]?.userId ?? null;
}
