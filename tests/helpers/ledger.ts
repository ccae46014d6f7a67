/**
 * Helpers for ledger tests: building claim requests, staging races on real PostgreSQL sessions, and reading
 * back what the database holds. Races are staged, not hoped for: a blocking session is detected through
 * pg_stat_activity (waitForBlockedSessions in ./wait.ts), never by sleeping.
 */
import pg from "pg";
import { randomUUID } from "node:crypto";
import { testPool } from "./db";
import { testStack } from "./stack";
import { insertClaim, type ClaimRequest } from "../../lib/ledger/claim";
import type { LedgerEntry } from "../../lib/ledger/entry";
import type { LedgerType } from "../../lib/ledger/keys";

/** A fresh ref id (valid per contract section 1). */
export function freshRefId(prefix = "t"): string {
  return `${prefix}-${randomUUID()}`;
}

/** A claim request for `userId` with sensible defaults (amount 1000 USD minor units, lease 30 s). */
export function claimRequest(
  userId: string,
  overrides: Partial<Omit<ClaimRequest, "key">> & { type?: LedgerType; refId?: string } = {},
): ClaimRequest {
  const amountMinor = overrides.amountMinor ?? 1000;
  const currency = overrides.currency ?? "USD";
  return {
    key: { userId, type: overrides.type ?? "topup", refId: overrides.refId ?? freshRefId() },
    amountMinor,
    currency,
    params: overrides.params ?? { amount: amountMinor, currency },
    leaseOwner: overrides.leaseOwner ?? "test-worker",
    leaseMs: overrides.leaseMs ?? 30_000,
    actor: overrides.actor ?? "request",
  };
}

/**
 * Claims `request.key` for a test's setup with the ledger's own claim (lib/ledger `insertClaim`, one autocommit
 * statement on the test pool): the new row, `initiated` under `request.leaseOwner`. Throws when the key is taken.
 */
export async function claimEntry(request: ClaimRequest): Promise<LedgerEntry> {
  const entry = await insertClaim(testPool(), request);
  if (!entry) throw new Error(`${request.key.type} ${request.key.refId}: the key is already taken`);
  return entry;
}

/** A dedicated connection (not from a pool) with an application_name to find it in pg_stat_activity. */
export async function dedicatedClient(name: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: testStack().databaseUrl, application_name: name });
  await client.connect();
  return client;
}

/** Rows of a key (0 or 1 when the claim index holds). */
export async function countRows(userId: string, type: LedgerType, refId: string): Promise<number> {
  const result = await testPool().query<{ n: number }>(
    "SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id = $3",
    [userId, type, refId],
  );
  return result.rows[0]?.n ?? 0;
}

/** The user's wallet balance in minor units (0 without a wallet row). */
export async function balanceOf(userId: string): Promise<number> {
  const result = await testPool().query<{ b: string }>(
    "SELECT balance_minor::text AS b FROM wallets WHERE user_id = $1",
    [userId],
  );
  return Number(result.rows[0]?.b ?? 0);
}

/** Credits `amountMinor` directly (test setup only), creating the wallet if needed. */
export async function seedBalance(userId: string, amountMinor: number): Promise<void> {
  await testPool().query(
    `INSERT INTO wallets (user_id, balance_minor, currency) VALUES ($1, $2, 'USD')
     ON CONFLICT (user_id) DO UPDATE SET balance_minor = wallets.balance_minor + EXCLUDED.balance_minor`,
    [userId, amountMinor],
  );
}

/** The audit transitions of an entry, oldest first. */
export async function transitionsOf(
  userId: string,
  entryId: number,
): Promise<{ from: string | null; to: string; actor: string; fencingToken: number }[]> {
  const result = await testPool().query(
    "SELECT from_status, to_status, actor, attempt FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id",
    [userId, entryId],
  );
  return result.rows.map((r) => ({ from: r.from_status, to: r.to_status, actor: r.actor, fencingToken: r.attempt }));
}
