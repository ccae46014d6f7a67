/**
 * Fixtures of the chargeback tests (tests/integration/chargebacks*.test.ts): top-ups and payments through the
 * request path, the bank's disputes and the exact bytes of their events, the real webhook handler, and the wallet's
 * balance, debt and dispute entries as the database holds them. Not a test file (no `.test.ts`).
 */
import type { BankDispute } from "@/lib/bank/disputes";
import { signWebhook } from "@/lib/bank/signature";
import { createPayment } from "@/lib/payments/create-payment";
import { createTopup } from "@/lib/topups/create-topup";
import { handleBankWebhook } from "@/lib/webhooks/handle-bank-webhook";
import { testPool } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { testStack } from "../helpers/stack";

/** A top-up through the request path (the sandbox answers `succeeded` at once); returns its merchant reference. */
export async function topUp(userId: string, refId: string, amountMinor: number): Promise<string> {
  const result = await createTopup({ userId, refId, amountMinor, currency: "USD" });
  if (result.kind !== "response" || result.response.status !== 201) throw new Error(JSON.stringify(result));
  const { topup } = JSON.parse(result.response.body) as { topup: { status: string } };
  if (topup.status !== "succeeded") throw new Error(`top-up ${refId} is ${topup.status}`);
  return `topup:${userId}:${refId}`;
}

/** A payment through the request path: its HTTP status and problem code (null on success). */
export async function pay(userId: string, amountMinor: number): Promise<{ status: number; code: string | null }> {
  const result = await createPayment({ userId, orderId: freshRefId("order"), amountMinor, currency: "USD" });
  if (result.kind !== "response") throw new Error(JSON.stringify(result));
  const body = JSON.parse(result.response.body) as { code?: string };
  return { status: result.response.status, code: body.code ?? null };
}

/** The dispute of `merchantRef` once the bank reports `status` (polls its listing every 20 ms, at most 10 s). */
export async function bankDisputeOf(
  bankUrl: string,
  merchantRef: string,
  status: BankDispute["status"],
): Promise<BankDispute> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const response = await fetch(`${bankUrl}/disputes?since=2000-01-01T00:00:00Z&limit=1000`);
    const { disputes } = (await response.json()) as { disputes: BankDispute[] };
    const found = disputes.find((d) => d.merchantRef === merchantRef);
    if (found?.status === status) return found;
    if (Date.now() > deadline) throw new Error(`dispute of ${merchantRef}: ${JSON.stringify(found)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The exact bodies of the dispute events the bank queued for `merchantRef`, in the order it queued them. */
export async function disputeEventBodies(bankUrl: string, merchantRef: string): Promise<string[]> {
  const response = await fetch(`${bankUrl}/_sandbox/deliveries?merchantRef=${encodeURIComponent(merchantRef)}`);
  const { deliveries } = (await response.json()) as { deliveries: Array<{ type: string; body: string }> };
  return deliveries.filter((d) => d.type.startsWith("charge.dispute")).map((d) => d.body);
}

/** The real handler, as the route calls it: signed bytes in. Returns the recorded outcome. */
export async function deliver(body: string): Promise<string> {
  const secrets = testStack().webhookSecrets.split(",");
  const result = await handleBankWebhook(Buffer.from(body), signWebhook(body, secrets, Math.floor(Date.now() / 1000)));
  if (result.kind !== "received") throw new Error(`handler answered ${JSON.stringify(result)}`);
  return result.outcome;
}

/** The wallet's balance and debt, and the user's dispute entries (type, amount, status), as the database holds them. */
export async function ledgerOf(userId: string) {
  const wallet = await testPool().query<{ balance: string; debt: string }>(
    "SELECT balance_minor::text AS balance, debt_minor::text AS debt FROM wallets WHERE user_id = $1",
    [userId],
  );
  const entries = await testPool().query<{ type: string; ref_id: string; amount_minor: string; status: string }>(
    `SELECT type, ref_id, amount_minor::text, status FROM ledger_entries
      WHERE user_id = $1 AND type IN ('chargeback', 'chargeback_reversal') ORDER BY id`,
    [userId],
  );
  return {
    balance: Number(wallet.rows[0]?.balance ?? 0),
    debt: Number(wallet.rows[0]?.debt ?? 0),
    entries: entries.rows.map((r) => `${r.type}:${r.ref_id}:${r.amount_minor}:${r.status}`),
  };
}

/**
 * Opens a dispute the bank keeps open (an empty plan, through `/_sandbox/disputes`) on the charge of `merchantRef`.
 * Returns the charge id and the dispute.
 */
export async function openDisputeKeptOpen(
  bankUrl: string,
  merchantRef: string,
): Promise<{ chargeId: string; dispute: BankDispute }> {
  const charge = (await (await fetch(`${bankUrl}/charges?merchantRef=${encodeURIComponent(merchantRef)}`)).json()) as {
    id: string;
  };
  const opened = await fetch(`${bankUrl}/_sandbox/disputes`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ chargeId: charge.id, plan: [] }),
  });
  if (opened.status !== 201) throw new Error(`no dispute opened: ${opened.status}`);
  return { chargeId: charge.id, dispute: (await opened.json()) as BankDispute };
}
