/**
 * Crashes (case C12): an app process killed with SIGKILL in the middle of a top-up, a restart,
 * and recovery through `POST /api/v1/admin/reconcile`. The test runs its own app process (the same build, the
 * stack's PostgreSQL and Redis) and its own sandbox bank (free port, own state file, no webhooks, so only the
 * reconciler can finish what the crash left), and reconciles only its own user, so the rest of the http suite is
 * never touched. Also: the admin routes refuse non-admins.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startBank as startSandboxBank, type RunningBank } from "../../scripts/lib/stack";
import { freePort } from "../../scripts/lib/ports";
import { signalGroup, type Service } from "../../scripts/lib/processes";
import { startExtraApp } from "../helpers/extra-app";
import { testPool } from "../helpers/db";
import { createApiUser, type ApiUser } from "../helpers/http";
import { balanceOf, freshRefId } from "../helpers/ledger";
import { testStack } from "../helpers/stack";
import { waitFor } from "../helpers/wait";

/** The sandbox's slow switch delay here: long enough to kill the app while it waits, short enough for a test. */
const BANK_SLOW_MS = 4000;
/** Bank calls of the crash app give up after 2 s (its requests to a stopped bank must end within the test). */
const APP_BANK_TIMEOUT_MS = 2000;

let stateDir = "";
let bankPort = 0;
let bank: RunningBank | null = null;
let app: Service | null = null;
let appUrl = "";
let appStarts = 0;
let admin: ApiUser;

async function startBank(): Promise<RunningBank> {
  bank = await startSandboxBank({
    env: {
      BANK_PORT: String(bankPort),
      APP_URL: appUrl || "http://127.0.0.1:9",
      BANK_STATE_FILE: join(stateDir, "bank-state.json"),
      BANK_WEBHOOK_SECRETS: testStack().webhookSecrets,
      // No webhooks at all: what the crash leaves unfinished, only the reconciler can finish.
      BANK_FAULT_NOHOOK_RATE: "1",
      BANK_SYNC_SUCCESS: "1",
      BANK_SLOW_MS: String(BANK_SLOW_MS),
      BANK_SHUTDOWN_GRACE_MS: "200",
    },
  });
  return bank;
}

/** Starts `next start` of the current build on `appUrl`'s port against the stack's database and this bank. */
async function startApp(): Promise<Service> {
  appStarts += 1;
  const port = Number(new URL(appUrl).port);
  app = await startExtraApp({
    name: `crash-app-${appStarts}`,
    port,
    bankUrl: `http://127.0.0.1:${bankPort}`,
    env: { BANK_TIMEOUT_MS: String(APP_BANK_TIMEOUT_MS) },
  });
  return app;
}

/** SIGKILL to the app's whole process group (next start and its server), no cleanup of any kind. */
async function killApp(): Promise<void> {
  if (!app) return;
  signalGroup(app.pid, "SIGKILL");
  await app.exited;
  app = null;
}

function post(path: string, token: string, body?: unknown) {
  return fetch(`${appUrl}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function rowOf(userId: string, refId: string) {
  const result = await testPool().query(
    "SELECT id, status, lease_owner, response_status, response_body, bank_charge_id FROM ledger_entries WHERE user_id = $1 AND type = 'topup' AND ref_id = $2",
    [userId, refId],
  );
  return result.rows[0] as
    | {
        id: number;
        status: string;
        lease_owner: string | null;
        response_status: number | null;
        response_body: string | null;
        bank_charge_id: string | null;
      }
    | undefined;
}

/** Polls the database (every 20 ms, at most 20 s) until the row of the key satisfies `accept`. */
async function waitForRow(
  userId: string,
  refId: string,
  accept: (row: NonNullable<Awaited<ReturnType<typeof rowOf>>>) => boolean,
) {
  const row = await waitFor(
    () => rowOf(userId, refId),
    (read) => read !== undefined && read !== null && accept(read),
    { what: `row ${refId} to reach the expected state`, timeoutMs: 20_000 },
  );
  return row!;
}

async function bankCharges(merchantRef: string): Promise<Array<{ id: string; status: string }>> {
  const response = await fetch(`http://127.0.0.1:${bankPort}/charges?${new URLSearchParams({ merchantRef })}`);
  if (response.status === 404) return [];
  expect(response.status).toBe(200);
  return [(await response.json()) as { id: string; status: string }];
}

/** "LEASE_MS later": the dead worker's lease is made to have expired (test setup only; avoids a 30 s sleep). */
async function expireLeases(userId: string): Promise<void> {
  await testPool().query(
    "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 second' WHERE user_id = $1 AND status IN ('initiated', 'processing')",
    [userId],
  );
}

async function reconcileUser(userId: string) {
  const response = await post(`/api/v1/admin/reconcile?userId=${encodeURIComponent(userId)}`, admin.token);
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), "crash-bank-"));
  [bankPort, appUrl] = await Promise.all([freePort(), freePort().then((port) => `http://127.0.0.1:${port}`)]);
  await startBank();
  await startApp();
  admin = await createApiUser("admin");
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await bank?.stop();
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

describe("admin routes", () => {
  it("reconcile and audit answer 401 without credentials and 403 for a non-admin", async () => {
    const user = await createApiUser();
    expect((await fetch(`${appUrl}/api/v1/admin/reconcile`, { method: "POST" })).status).toBe(401);
    const reconcile = await post("/api/v1/admin/reconcile", user.token);
    expect(reconcile.status).toBe(403);
    expect(await reconcile.json()).toMatchObject({ code: "forbidden" });
    const audit = await fetch(`${appUrl}/api/v1/admin/audit`, { headers: { authorization: `Bearer ${user.token}` } });
    expect(audit.status).toBe(403);
    expect((await post("/api/v1/admin/reconcile?userId=a:b", admin.token)).status).toBe(400);
  });

  it("an admin's scoped pass over a user with nothing to do answers the contract's counters", async () => {
    const user = await createApiUser();
    expect(await reconcileUser(user.id)).toEqual({ examined: 0, completed: 0, failed: 0, redriven: 0, skipped: 0 });
  });

  it("an admin's audit answers { ok, checks: [{ name, ok, violations }] }", async () => {
    const response = await fetch(`${appUrl}/api/v1/admin/audit`, {
      headers: { authorization: `Bearer ${admin.token}` },
    });
    expect(response.status).toBe(200);
    const report = (await response.json()) as {
      ok: boolean;
      checks: Array<{ name: string; ok: boolean; violations: string[] }>;
    };
    // The shared test database holds other files' deliberate corruptions, so only the shape is asserted here;
    // the checks' verdicts are proven in tests/integration/reconciler-audit.test.ts.
    expect(typeof report.ok).toBe("boolean");
    expect(report.checks.map((c) => c.name)).toEqual([
      "balance_matches_ledger",
      "no_duplicate_keys",
      "topups_match_bank_charges",
      "reward_cap",
      "stored_responses_replayable",
      "no_expired_unfinished_rows",
      "succeeded_charges_credited",
      "refunds_within_topups",
      "bank_refunds_recorded",
      "lost_disputes_charged_back",
      "returned_within_charge",
      "books_balanced",
      "journal_matches_entries",
      "wallet_accounts_match",
      "bank_clearing_matches_bank",
      "payouts_match_bank",
      "transfers_balanced",
    ]);
  });
});

describe("kill -9 in the middle of a top-up", () => {
  it("killed while the bank call was in flight (the charge was made): a retry is 409, never a second charge; after the reconciler the retry replays succeeded", async () => {
    const user = await createApiUser();
    const refId = freshRefId("sbx-slow-crash");
    const merchantRef = `topup:${user.id}:${refId}`;
    // The bank makes the charge at once and holds its reply for 4 s; the app dies while it waits.
    const inFlight = post("/api/v1/topups", user.token, { refId, amount: 2600 }).then(
      (response) => ({ kind: "answered" as const, status: response.status }),
      () => ({ kind: "connection_lost" as const }),
    );
    await waitFor(
      () => bankCharges(merchantRef),
      (charges) => charges.length > 0,
      { what: "the bank to see the charge" },
    );
    await killApp();
    expect(await inFlight).toEqual({ kind: "connection_lost" });
    const orphan = await rowOf(user.id, refId);
    expect(orphan).toMatchObject({ status: "processing", response_status: null });
    expect(orphan!.lease_owner).not.toBeNull();

    await startApp();
    const retry = await post("/api/v1/topups", user.token, { refId, amount: 2600 });
    expect(retry.status).toBe(409);
    expect(retry.headers.get("retry-after")).toBe("1");
    expect(await bankCharges(merchantRef)).toHaveLength(1);

    await expireLeases(user.id);
    expect(await reconcileUser(user.id)).toEqual({ examined: 1, completed: 1, failed: 0, redriven: 0, skipped: 0 });
    const replay = await post("/api/v1/topups", user.token, { refId, amount: 2600 });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(((await replay.json()) as { topup: { status: string } }).topup.status).toBe("succeeded");
    expect(await balanceOf(user.id)).toBe(2600);
    expect(await bankCharges(merchantRef)).toHaveLength(1);
  });

  it("killed after the claim, before the bank saw anything: the reconciler re-drives it once; the retry replays succeeded", async () => {
    const user = await createApiUser();
    const refId = freshRefId("crash-before-bank");
    const merchantRef = `topup:${user.id}:${refId}`;
    // A stopped bank accepts the connection (the kernel does) but never reads the request.
    process.kill(bank!.pid, "SIGSTOP");
    const inFlight = post("/api/v1/topups", user.token, { refId, amount: 900 }).catch(() => null);
    await waitForRow(user.id, refId, (row) => row.status === "processing");
    await killApp();
    await inFlight;
    // The bank dies without ever reading that request; it restarts from its state file on the same port.
    await bank!.kill();
    await startBank();
    expect(await bankCharges(merchantRef)).toEqual([]);

    await startApp();
    await expireLeases(user.id);
    expect(await reconcileUser(user.id)).toEqual({ examined: 1, completed: 1, failed: 0, redriven: 1, skipped: 0 });
    expect(await bankCharges(merchantRef)).toHaveLength(1);
    const replay = await post("/api/v1/topups", user.token, { refId, amount: 900 });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(((await replay.json()) as { topup: { status: string } }).topup.status).toBe("succeeded");
    expect(await balanceOf(user.id)).toBe(900);
  });

  it("C12: the bank call fails after the claim committed (bank down): 201 processing is stored; the reconciler finishes the row; retries replay the first response byte for byte", async () => {
    const user = await createApiUser();
    const refId = freshRefId("c12-bank-down");
    await bank!.kill();
    const response = await post("/api/v1/topups", user.token, { refId, amount: 450 });
    const firstText = await response.text();
    expect(response.status).toBe(201);
    expect(JSON.parse(firstText).topup.status).toBe("processing");

    await startBank();
    await expireLeases(user.id);
    expect(await reconcileUser(user.id)).toMatchObject({ examined: 1, completed: 1, redriven: 1 });
    expect(await balanceOf(user.id)).toBe(450);
    const replay = await post("/api/v1/topups", user.token, { refId, amount: 450 });
    expect(replay.status).toBe(201);
    expect(await replay.text()).toBe(firstText);
    const current = await fetch(`${appUrl}/api/v1/topups/${refId}`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(((await current.json()) as { topup: { status: string } }).topup.status).toBe("succeeded");
  });
});
