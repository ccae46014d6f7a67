/**
 * Shared setup of the refund tests: a real sandbox bank behind a counting proxy (so a test can say how many
 * `POST /refunds` the app made per key), succeeded top-ups made through the real top-up operation, and refund
 * webhooks delivered to the real handler as signed bytes.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTopup } from "@/lib/topups/create-topup";
import { signWebhook } from "@/lib/bank/signature";
import { findEntryByKey } from "@/lib/ledger/claim";
import type { LedgerEntry } from "@/lib/ledger/entry";
import { handleBankWebhook } from "@/lib/webhooks/handle-bank-webhook";
import type { BankRefund } from "@/lib/bank/refunds-client";
import { testPool } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { waitFor } from "../helpers/wait";
import { testStack } from "../helpers/stack";

/** Forwards every request to `targetUrl` and counts `POST /refunds` per Idempotency-Key. */
export async function startCountingProxy(targetUrl: string): Promise<{
  url: string;
  refundPosts: Map<string, number>;
  stop(): Promise<void>;
}> {
  const refundPosts = new Map<string, number>();
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    if (req.method === "POST" && req.url === "/refunds") {
      const key = String(req.headers["idempotency-key"]);
      refundPosts.set(key, (refundPosts.get(key) ?? 0) + 1);
    }
    const headers: Record<string, string> = {};
    for (const name of ["content-type", "idempotency-key", "accept"]) {
      const value = req.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    const answer = await fetch(new URL(req.url ?? "/", targetUrl), {
      method: req.method,
      headers,
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
    });
    const text = await answer.text();
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    refundPosts,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A top-up of `amountMinor` that succeeded through the real operation (the bank answers succeeded at once). */
export async function succeededTopup(userId: string, amountMinor: number): Promise<LedgerEntry> {
  const refId = freshRefId("rf-topup");
  const result = await createTopup({ userId, refId, amountMinor, currency: "USD" });
  if (result.kind !== "response") throw new Error(`top-up not made: ${JSON.stringify(result)}`);
  const entry = await findEntryByKey({ userId, type: "topup", refId });
  if (entry?.status !== "succeeded") throw new Error(`top-up ${refId} is ${entry?.status}`);
  return entry;
}

/** The bank's refunds of a charge. */
export async function bankRefundsOf(bankUrl: string, chargeId: string): Promise<BankRefund[]> {
  const res = await fetch(`${bankUrl}/refunds?chargeId=${encodeURIComponent(chargeId)}`);
  return ((await res.json()) as { refunds: BankRefund[] }).refunds;
}

/** Polls the bank until the refund of `merchantRef` has `status` (bounded: 15 s). */
export async function waitForBankRefund(
  bankUrl: string,
  chargeId: string,
  merchantRef: string,
  status: BankRefund["status"],
): Promise<BankRefund> {
  const refund = await waitFor(
    async () => (await bankRefundsOf(bankUrl, chargeId)).find((r) => r.merchantRef === merchantRef),
    (found) => found?.status === status,
    { what: `the bank's refund ${merchantRef} to be ${status}`, timeoutMs: 15_000, intervalMs: 25 },
  );
  return refund!;
}

/** Delivers a refund event for `refund` to the real handler as signed bytes; returns the handler's result. */
export async function deliverRefundEvent(
  type: "refund.succeeded" | "refund.failed",
  refund: BankRefund,
  eventId: string,
) {
  const rawBody = JSON.stringify({
    id: eventId,
    type,
    created: new Date().toISOString(),
    data: {
      refundId: refund.id,
      chargeId: refund.chargeId,
      merchantRef: refund.merchantRef,
      amount: refund.amount,
      currency: refund.currency,
    },
  });
  const secrets = testStack().webhookSecrets.split(",");
  return handleBankWebhook(Buffer.from(rawBody), signWebhook(rawBody, secrets, Math.floor(Date.now() / 1000)));
}

/** A top-up's refundable bookkeeping and the wallet, as the database holds them. */
export async function moneyOf(userId: string, topupId: number): Promise<{ balance: number; refunded: number }> {
  const result = await testPool().query<{ balance: string; refunded: string }>(
    `SELECT (SELECT balance_minor FROM wallets WHERE user_id = $1)::text AS balance,
            (SELECT refunded_minor FROM ledger_entries WHERE user_id = $1 AND id = $2)::text AS refunded`,
    [userId, topupId],
  );
  return { balance: Number(result.rows[0]?.balance ?? 0), refunded: Number(result.rows[0]?.refunded ?? 0) };
}
