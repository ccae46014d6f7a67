/**
 * Fixtures of the reconciler and audit tests: real sandbox bank processes on free ports with their own state
 * files, a proxy that makes a real bank misbehave in one documented way, and stuck top-up rows built with the
 * ledger's own functions. Not a test file (no `.test.ts`): imported by tests/integration/reconciler*.test.ts.
 */
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { startBank, type RunningBank } from "@/scripts/lib/stack";
import { createCharge, getCharge, type BankCharge } from "@/lib/bank/client";
import { merchantRefFor } from "@/lib/bank/merchant-ref";
import { getEntryById, markProcessing } from "@/lib/ledger/transitions";
import type { LedgerEntry } from "@/lib/ledger/entry";
import type { ReconcileLogger, ReconcileOptions } from "@/lib/reconciler/reconcile-once";
import { freePort } from "@/scripts/lib/ports";
import { randomWebhookSecret } from "@/scripts/lib/secrets";
import { testPool } from "../helpers/db";
import { claimEntry, claimRequest, freshRefId } from "../helpers/ledger";
import { waitFor } from "../helpers/wait";

/** Budget of one bank call in these tests: a local bank answers in milliseconds; 5 s only bounds a hang. */
export const BANK_TIMEOUT_MS = 5000;

export interface TestBank {
  readonly url: string;
  readonly process: RunningBank;
  stop(): Promise<void>;
}

export interface TestBankOptions {
  /** Answer `succeeded` at once (BANK_SYNC_SUCCESS). Default true. */
  syncSuccess?: boolean;
  /** From creation to settlement (BANK_WEBHOOK_DELAY_MS). Default 30 ms (the sandbox's fast test schedule). */
  settleDelayMs?: number;
}

/**
 * Starts a real sandbox bank (`node --import tsx bank/main.ts`) on a free port with a fresh state file. Its
 * webhooks go to a closed port (one attempt, then given up): in these tests only the reconciler settles rows,
 * so what it does is not mixed with webhook deliveries.
 */
export async function startTestBank(options: TestBankOptions = {}): Promise<TestBank> {
  const stateDir = await mkdtemp(join(tmpdir(), "reconciler-bank-"));
  const closedPort = await freePort();
  const bank = await startBank({
    env: {
      APP_URL: `http://127.0.0.1:${closedPort}`,
      BANK_STATE_FILE: join(stateDir, "bank-state.json"),
      // Nobody verifies these webhooks (they go to a closed port), but the bank signs only with a usable secret.
      BANK_WEBHOOK_SECRETS: randomWebhookSecret(),
      BANK_SYNC_SUCCESS: options.syncSuccess === false ? "0" : "1",
      BANK_WEBHOOK_DELAY_MS: String(options.settleDelayMs ?? 30),
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

/**
 * A proxy in front of a real bank that answers every `GET /charges?merchantRef=` with 404 and forwards
 * everything else unchanged: a provider whose lookup lags behind its writes. With it the reconciler believes a
 * row never reached the bank although the charge exists, which is exactly the case the cancel-before-fail rule
 * exists for.
 */
export async function startLaggingLookupProxy(targetUrl: string): Promise<{ url: string; stop(): Promise<void> }> {
  const target = new URL(targetUrl);
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://proxy.invalid");
    if (req.method === "GET" && url.pathname === "/charges" && url.searchParams.has("merchantRef")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "not_found", message: "no charge for this merchant reference" } }));
      return;
    }
    const forwarded = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on("error", () => res.destroy());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Reconciler options for a test: its bank, only its users, a logger that keeps what the pass said. */
export function passOptions(
  bankUrl: string,
  userIds: string[],
  extra: ReconcileOptions = {},
): ReconcileOptions & { logger: ReconcileLogger & { lines: string[] } } {
  const lines: string[] = [];
  const logger = {
    lines,
    info: (_object: Record<string, unknown>, message: string) => void lines.push(`info ${message}`),
    warn: (object: Record<string, unknown>, message: string) =>
      void lines.push(`warn ${message} ${JSON.stringify(object)}`),
  };
  return { bankUrl, bankTimeoutMs: BANK_TIMEOUT_MS, userIds, ...extra, logger };
}

export interface StuckTopup {
  readonly entry: LedgerEntry;
  readonly refId: string;
  readonly merchantRef: string;
  readonly ref: { userId: string; entryId: number };
}

/**
 * A top-up left behind by a request that died: claimed (actor request, lease of "dead-worker"), optionally moved
 * to `processing` (it was about to call the bank), optionally charged at `bankUrl` (the call reached the bank and
 * the reply was lost), and its lease expired (set in the past by SQL, test setup only, so the test does not
 * sleep). Returns the row as the database holds it afterwards.
 */
export async function stuckTopup(
  userId: string,
  options: { amountMinor?: number; refId?: string; processing?: boolean; chargeAt?: string | null; ageS?: number } = {},
): Promise<StuckTopup> {
  const refId = options.refId ?? freshRefId("stuck");
  const amountMinor = options.amountMinor ?? 1000;
  const claim = await claimEntry(claimRequest(userId, { refId, amountMinor, leaseOwner: "dead-worker" }));
  const ref = { userId, entryId: claim.id };
  if (options.processing ?? true) await markProcessing(ref, claim.fencingToken);
  const merchantRef = merchantRefFor(userId, refId);
  if (options.chargeAt) {
    const charged = await createCharge(
      { merchantRef, amountMinor, currency: "USD" },
      { bankUrl: options.chargeAt, timeoutMs: BANK_TIMEOUT_MS },
    );
    if (charged.kind !== "charge") throw new Error(`stuckTopup: the bank did not charge: ${JSON.stringify(charged)}`);
  }
  await testPool().query(
    `UPDATE ledger_entries
        SET lease_expires_at = now() - interval '1 second',
            created_at = now() - $3::int * interval '1 second'
      WHERE user_id = $1 AND id = $2`,
    [userId, claim.id, options.ageS ?? 0],
  );
  const entry = await getEntryById(ref);
  if (!entry) throw new Error("stuckTopup: row vanished");
  return { entry, refId, merchantRef, ref };
}

/** The bank's charge for a merchant reference, or null (404). Throws when the bank does not answer. */
export async function bankChargeOf(bankUrl: string, merchantRef: string): Promise<BankCharge | null> {
  const looked = await getCharge(merchantRef, { bankUrl, timeoutMs: BANK_TIMEOUT_MS });
  if (looked.kind === "found") return looked.charge;
  if (looked.kind === "not_found") return null;
  throw new Error(`bank lookup failed: ${JSON.stringify(looked)}`);
}

/** Polls the bank (every 20 ms, at most `timeoutMs`) until the charge of `merchantRef` has `status`. */
export async function waitForChargeStatus(
  bankUrl: string,
  merchantRef: string,
  status: BankCharge["status"],
  timeoutMs = 10_000,
): Promise<BankCharge> {
  const charge = await waitFor(
    () => bankChargeOf(bankUrl, merchantRef),
    (found) => found?.status === status,
    { what: `the charge of ${merchantRef} to be ${status}`, timeoutMs },
  );
  return charge!;
}

/** The database pid of a dedicated client (to find the sessions it blocks). */
export async function backendPid(client: pg.Client): Promise<number> {
  const result = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  return result.rows[0]!.pid;
}

/** Audit rows of one entry, oldest first, with their detail. */
export async function auditTrail(
  userId: string,
  entryId: number,
): Promise<{ from: string | null; to: string; actor: string; fencingToken: number; detail: string | null }[]> {
  const result = await testPool().query(
    "SELECT from_status, to_status, actor, attempt, detail FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id",
    [userId, entryId],
  );
  return result.rows.map((r) => ({
    from: r.from_status,
    to: r.to_status,
    actor: r.actor,
    fencingToken: r.attempt,
    detail: r.detail,
  }));
}

/** The stored response of a row (status and exact body), or null. */
export async function storedResponseOf(
  userId: string,
  entryId: number,
): Promise<{ status: number; body: string } | null> {
  const result = await testPool().query(
    "SELECT response_status, response_body FROM ledger_entries WHERE user_id = $1 AND id = $2",
    [userId, entryId],
  );
  const row = result.rows[0];
  return row?.response_status == null ? null : { status: row.response_status, body: row.response_body };
}
