/**
 * Shared setup of the payout tests (tests/integration/payouts.test.ts): a real sandbox bank with a short return delay,
 * a proxy in front of it that counts `POST /payouts` per Idempotency-Key (and how many of them created a payout) and
 * can hold the bank's reply to one key until the test lets it go, signed payout events delivered to the real webhook
 * handler, and reads of the books. Not a test file (no `.test.ts`).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BankPayout } from "@/lib/bank/payouts-client";
import { operationKey } from "@/lib/ledger/keys";
import type { PayoutClaimRequest } from "@/lib/ledger/payouts";
import { problemStoredResponse } from "@/lib/problems";
import { signWebhook } from "@/lib/bank/signature";
import { handleBankWebhook } from "@/lib/webhooks/handle-bank-webhook";
import { freePort } from "@/scripts/lib/ports";
import { randomWebhookSecret } from "@/scripts/lib/secrets";
import { startBank } from "@/scripts/lib/stack";
import { testPool } from "../helpers/db";
import { testStack } from "../helpers/stack";
import { waitFor } from "../helpers/wait";
import type { TestBank } from "./reconciler-fixtures";

/** A valid sandbox account number (10 digits, Luhn). */
export const DESTINATION = "4000000002";

/**
 * A real sandbox bank (as reconciler-fixtures.ts `startTestBank`: charges succeed at once, webhooks go to a closed
 * port so only the test delivers events) whose payouts settle `settleDelayMs` after they are made and, with the
 * `sbx-po-return-` switch, are returned `returnDelayMs` after they were paid.
 */
export async function startPayoutBank(options: { settleDelayMs: number; returnDelayMs: number }): Promise<TestBank> {
  const stateDir = await mkdtemp(join(tmpdir(), "payout-bank-"));
  const closedPort = await freePort();
  const bank = await startBank({
    env: {
      APP_URL: `http://127.0.0.1:${closedPort}`,
      BANK_STATE_FILE: join(stateDir, "bank-state.json"),
      BANK_WEBHOOK_SECRETS: randomWebhookSecret(),
      BANK_SYNC_SUCCESS: "1",
      BANK_WEBHOOK_DELAY_MS: String(options.settleDelayMs),
      BANK_PAYOUT_RETURN_DELAY_MS: String(options.returnDelayMs),
      BANK_WEBHOOK_MAX_ATTEMPTS: "1",
      BANK_WEBHOOK_TIMEOUT_MS: "500",
      BANK_SHUTDOWN_GRACE_MS: "200",
    },
  });
  return {
    url: bank.url,
    process: bank,
    async stop() {
      await bank.stop();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

export interface PayoutProxy {
  readonly url: string;
  /** `POST /payouts` per Idempotency-Key. */
  readonly posts: Map<string, number>;
  /** Of those, the ones the bank answered 201 (a new payout made). */
  readonly created: Map<string, number>;
  /** `GET /payouts/{id}` per payout id: the app asking the bank about one payout. */
  readonly lookups: Map<string, number>;
  /**
   * Holds the bank's reply to the next `POST /payouts` with `key` (the bank has already acted on it) until
   * `release()`. `arrived` resolves once the bank has answered that request.
   */
  holdReply(key: string): { arrived: Promise<void>; release(): void };
  stop(): Promise<void>;
}

/**
 * Forwards everything to `targetUrl`. A request whose upstream connection fails (the `sbx-po-lost-` switch destroys
 * it) has its own connection destroyed too, so the client sees the same network error.
 */
export async function startPayoutProxy(targetUrl: string): Promise<PayoutProxy> {
  const posts = new Map<string, number>();
  const created = new Map<string, number>();
  const lookups = new Map<string, number>();
  const holds = new Map<string, { arrived: () => void; gate: Promise<void> }>();
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
      const isPost = req.method === "POST" && req.url === "/payouts";
      const key = String(req.headers["idempotency-key"]);
      if (isPost) posts.set(key, (posts.get(key) ?? 0) + 1);
      const lookedUp = req.method === "GET" ? /^\/payouts\/([^/?]+)$/.exec(req.url ?? "")?.[1] : undefined;
      if (lookedUp) lookups.set(lookedUp, (lookups.get(lookedUp) ?? 0) + 1);
      const headers: Record<string, string> = {};
      for (const name of ["content-type", "idempotency-key", "accept"]) {
        const value = req.headers[name];
        if (typeof value === "string") headers[name] = value;
      }
      let answer: Response;
      let text: string;
      try {
        answer = await fetch(new URL(req.url ?? "/", targetUrl), {
          method: req.method,
          headers,
          body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
        });
        text = await answer.text();
      } catch {
        res.destroy();
        return;
      }
      if (isPost && answer.status === 201) created.set(key, (created.get(key) ?? 0) + 1);
      const hold = isPost ? holds.get(key) : undefined;
      if (hold) {
        holds.delete(key);
        hold.arrived();
        await hold.gate;
      }
      const out: Record<string, string> = { "content-type": answer.headers.get("content-type") ?? "application/json" };
      const replayed = answer.headers.get("idempotent-replayed");
      if (replayed) out["idempotent-replayed"] = replayed;
      res.writeHead(answer.status, out);
      res.end(text);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    posts,
    created,
    lookups,
    holdReply(key) {
      let arrived!: () => void;
      let release!: () => void;
      const arrivedPromise = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      holds.set(key, { arrived, gate });
      return { arrived: arrivedPromise, release };
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The bank's payout of `merchantRef`, or null (404). */
export async function bankPayoutOf(bankUrl: string, merchantRef: string): Promise<BankPayout | null> {
  const res = await fetch(`${bankUrl}/payouts?merchantRef=${encodeURIComponent(merchantRef)}`);
  if (res.status === 404) return null;
  if (res.status !== 200) throw new Error(`GET /payouts?merchantRef answered ${res.status}`);
  return (await res.json()) as BankPayout;
}

/** Every payout the bank holds for `merchantRef`, from its full listing (so two payouts of one key would show). */
export async function bankPayoutsListed(bankUrl: string, merchantRef: string): Promise<BankPayout[]> {
  const found: BankPayout[] = [];
  let since = "1970-01-01T00:00:00.000Z";
  for (;;) {
    const res = await fetch(`${bankUrl}/payouts?since=${encodeURIComponent(since)}&limit=1000`);
    const page = (await res.json()) as { payouts: BankPayout[]; hasMore: boolean; nextCursor: string };
    found.push(...page.payouts.filter((p) => p.merchantRef === merchantRef));
    if (!page.hasMore) return found;
    since = page.nextCursor;
  }
}

/** Polls the bank (bounded: 15 s) until the payout of `merchantRef` has `status`. */
export async function waitForBankPayout(
  bankUrl: string,
  merchantRef: string,
  status: BankPayout["status"],
): Promise<BankPayout> {
  const payout = await waitFor(
    () => bankPayoutOf(bankUrl, merchantRef),
    (found) => found?.status === status,
    { what: `the bank's payout ${merchantRef} to be ${status}`, timeoutMs: 15_000, intervalMs: 20 },
  );
  return payout!;
}

/**
 * Delivers a payout event about `payout` to the real handler as signed bytes, with the type (and status) the test
 * chooses, whatever the bank says: a forged event is signed like a real one. Returns the handler's result.
 */
export async function deliverPayoutEvent(
  type: "payout.paid" | "payout.failed" | "payout.returned",
  payout: BankPayout,
  eventId: string,
) {
  const status = type.slice("payout.".length);
  const rawBody = JSON.stringify({
    id: eventId,
    type,
    created: new Date().toISOString(),
    data: {
      payoutId: payout.id,
      merchantRef: payout.merchantRef,
      amount: payout.amount,
      currency: payout.currency,
      status,
      ...(type === "payout.failed" ? { failureReason: "insufficient_funds_at_bank" } : {}),
      ...(type === "payout.returned"
        ? { returnId: payout.returnId ?? "pr_forged", returnReason: payout.returnReason ?? "account_closed" }
        : {}),
    },
  });
  const secrets = testStack().webhookSecrets.split(",");
  return handleBankWebhook(Buffer.from(rawBody), signWebhook(rawBody, secrets, Math.floor(Date.now() / 1000)));
}

/** The journal transactions (entry, event) of a user's entries of `type`, as `event` names, sorted. */
export async function journalEventsOf(userId: string, entryId: number): Promise<string[]> {
  const result = await testPool().query<{ event: string }>(
    "SELECT DISTINCT event FROM ledger_postings WHERE user_id = $1 AND entry_id = $2 ORDER BY event",
    [userId, entryId],
  );
  return result.rows.map((r) => r.event);
}

/** How many journal transactions of `event` a user's postings hold (each is two postings: one transaction). */
export async function transactionsOf(userId: string, event: string): Promise<number> {
  const result = await testPool().query<{ n: number }>(
    "SELECT count(DISTINCT entry_id)::int AS n FROM ledger_postings WHERE user_id = $1 AND event = $2",
    [userId, event],
  );
  return result.rows[0]?.n ?? 0;
}

/** What the user's payouts hold against the limit on the UTC day of today (0 without a row). */
export async function limitUsedToday(userId: string): Promise<number> {
  const result = await testPool().query<{ n: string }>(
    "SELECT reserved_minor::text AS n FROM payout_limit_days WHERE user_id = $1 AND day = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
    [userId],
  );
  return Number(result.rows[0]?.n ?? 0);
}

/**
 * A payout claim of `amountMinor` to {@link DESTINATION} under a test lease, as lib/payouts/create-payout.ts makes
 * one; its refusals' bodies are `test: <code>`.
 */
export function payoutClaimRequest(
  userId: string,
  refId: string,
  amountMinor: number,
  dailyLimitMinor: number,
): PayoutClaimRequest {
  const refusal = (code: "insufficient_funds" | "debt_outstanding" | "payout_limit_exceeded") =>
    problemStoredResponse(code, `test: ${code}`);
  return {
    key: operationKey(userId, "payout", refId),
    amountMinor,
    currency: "USD",
    params: { amount: amountMinor, currency: "USD", destination: DESTINATION },
    leaseOwner: "test-claim",
    leaseMs: 30_000,
    dailyLimitMinor,
    refusals: {
      insufficientFunds: refusal("insufficient_funds"),
      debtOutstanding: refusal("debt_outstanding"),
      limitExceeded: refusal("payout_limit_exceeded"),
    },
  };
}
