/**
 * Negative controls kept runnable: the same concurrency scenario run against the real
 * claim and against the classic broken alternative, check-then-insert. The scenario's assertions pass for
 * the claim and fail for check-then-insert, which is the evidence that the concurrency tests bite.
 */
import { describe, expect, it } from "vitest";
import type pg from "pg";
import { insertClaim, type ClaimRequest } from "../../lib/ledger/claim";
import { ENTRY_COLUMNS, toLedgerEntry, type LedgerEntry } from "../../lib/ledger/entry";
import { fingerprint } from "../../lib/ledger/fingerprint";
import { createTestUser } from "../helpers/db";
import { claimRequest, countRows, dedicatedClient } from "../helpers/ledger";

/** Resolves for everyone once all sessions have arrived: the sessions are released in the same tick. */
type Barrier = () => Promise<void>;
type ClaimImpl = (client: pg.Client, request: ClaimRequest, barrier: Barrier) => Promise<LedgerEntry | null>;

function barrierFor(count: number): Barrier {
  let arrived = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return () => {
    arrived += 1;
    if (arrived === count) release();
    return released;
  };
}

/** The real claim: one INSERT ... ON CONFLICT DO NOTHING RETURNING. */
const realClaim: ClaimImpl = async (client, request, barrier) => {
  await barrier();
  return insertClaim(client, request);
};

/**
 * The broken pattern: read, then insert if nothing was seen. The barrier makes every session finish its read
 * before any inserts, which is the interleaving real traffic produces sometimes and this test always.
 */
const checkThenInsert: ClaimImpl = async (client, request, barrier) => {
  const { key } = request;
  const seen = await client.query("SELECT 1 FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id = $3", [
    key.userId,
    key.type,
    key.refId,
  ]);
  await barrier();
  if (seen.rowCount) return null;
  const inserted = await client.query(
    `INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) RETURNING ${ENTRY_COLUMNS}`,
    [
      key.userId,
      key.type,
      key.refId,
      request.amountMinor,
      request.currency,
      fingerprint(key.type, request.params),
      JSON.stringify(request.params),
    ],
  );
  return toLedgerEntry(inserted.rows[0]!);
};

/** C10's scenario: N sessions claim one key at once. Returns what happened. */
async function concurrentSameKey(impl: ClaimImpl, sessions: number) {
  const user = await createTestUser();
  const request = claimRequest(user.id);
  const clients = await Promise.all(Array.from({ length: sessions }, (_, i) => dedicatedClient(`neg-${i}`)));
  const barrier = barrierFor(sessions);
  try {
    // Every session reaches the barrier (its read done, for check-then-insert) before any goes on.
    const results = await Promise.allSettled(clients.map((client) => impl(client, request, barrier)));
    return {
      winners: results.filter((r) => r.status === "fulfilled" && r.value !== null).length,
      errors: results.filter((r) => r.status === "rejected").length,
      rows: await countRows(user.id, request.key.type, request.key.refId),
    };
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}

/** The assertions of the concurrency tests: exactly one winner, no error, one row. */
function assertExactlyOnce(outcome: { winners: number; errors: number; rows: number }): void {
  expect(outcome).toEqual({ winners: 1, errors: 0, rows: 1 });
}

describe("negative control: check-then-insert instead of the claim", () => {
  it("the claim passes the concurrency assertions (5 sessions, one key)", async () => {
    assertExactlyOnce(await concurrentSameKey(realClaim, 5));
  });

  it("check-then-insert fails them: every session saw nothing, so all insert and the losers hit 23505", async () => {
    const outcome = await concurrentSameKey(checkThenInsert, 5);
    expect(() => assertExactlyOnce(outcome)).toThrow();
    expect(outcome.errors).toBe(4);
  });
});
