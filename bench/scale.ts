/**
 * Scale: the claim's median latency with 10,000 rows in the ledger versus 1,000,000 (and 10,000,000 with
 * `--large`). Two databases: one kept at 10,000 rows, one filled to the larger size; the claims are timed in rounds
 * that alternate between them (ABBA), so that both sizes see the same machine (these machines' speed drifts within
 * minutes: docs/benchmarks.md). The claim is lib/ledger's own `insertClaim` (INSERT ... ON CONFLICT DO NOTHING
 * RETURNING plus its audit row, autocommit), timed one at a time so the figure is the statement's cost, not queueing.
 */
import type { Pool } from "pg";
import { insertClaim, operationKey, WORKER_ID } from "../lib/ledger";
import { percentile } from "./stats";

/**
 * Users the generated rows are spread over: 10,000, so 1M rows are 100 per user and 10M rows 1,000 per user (a busy
 * wallet's few years). The measured claims go to random users among them, as live traffic would.
 */
export const SCALE_USERS = 10_000;

/** The base size every larger ledger is compared with. */
export const SCALE_BASE_ROWS = 10_000;

/** Rows inserted per statement while filling: 500,000 keeps one statement's memory and WAL moderate. */
const FILL_BATCH_ROWS = 500_000;

/**
 * Claims timed per size: 2000 after 200 unmeasured ones (which warm the connection, the plan cache and the index
 * pages the claims touch). 2000 samples put the median within a few microseconds of its true value. They are timed
 * in {@link MEASURED_ROUNDS} rounds per size, the sizes alternating.
 */
const MEASURED_CLAIMS = 2000;
const WARMUP_CLAIMS = 200;
const MEASURED_ROUNDS = 10;

export interface ScalePoint {
  readonly ledgerRows: number;
  readonly claims: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /**
   * The 10,000-row database's p50 in the same alternating rounds (absent for that database's own point): the base of
   * this point's ratio.
   */
  readonly baseP50Ms?: number;
  /** EXPLAIN (ANALYZE, BUFFERS) of one claim at this size. */
  readonly plan: string;
  readonly fillSeconds: number;
}

/** Creates the users the generated rows belong to (ids `s1` .. `s10000`). */
export async function createScaleUsers(db: Pool): Promise<void> {
  await db.query(
    `INSERT INTO "user" ("id", "name", "email")
     SELECT 's' || i, 'Scale user ' || i, 's' || i || '@bench.test' FROM generate_series(1, $1::int) AS i`,
    [SCALE_USERS],
  );
}

// Generated rows: the three types in turn, succeeded, with a stored response of realistic size (~250 bytes) and,
// for top-ups, a bank charge id (so the (user_id, bank_charge_id) index is as full as in production), created over
// the past, and two audit rows each (initiated, succeeded) like a real claim and credit, and its two postings.
// $1 first row number, $2 last row number, $3 users.
const FILL_ENTRIES_SQL = `
INSERT INTO ledger_entries
  (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, response_status, response_body, bank_charge_id, created_at, updated_at)
SELECT 's' || (1 + i % $3::int),
       (ARRAY['topup', 'reward', 'payment'])[1 + i % 3],
       'g' || i,
       100,
       'USD',
       md5(i::text) || md5((-i)::text),
       '{"amount":100,"currency":"USD"}'::jsonb,
       'succeeded',
       201,
       '{"entry":{"type":"topup","refId":"g' || i || '","amount":100,"currency":"USD","status":"succeeded","failureReason":null,"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z"}}',
       CASE WHEN i % 3 = 0 THEN 'ch_g' || i END,
       now() - i * interval '1 second',
       now() - i * interval '1 second'
  FROM generate_series($1::bigint, $2::bigint) AS i`;

const FILL_TRANSITIONS_SQL = `
INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, at)
SELECT user_id, id, s.from_status, s.to_status, 'request', 1, created_at
  FROM ledger_entries
 CROSS JOIN (VALUES (NULL, 'initiated'), ('initiated', 'succeeded')) AS s (from_status, to_status)
 WHERE id > $1::bigint`;

// Each generated entry's journal transaction (docs/decisions/058): the two postings its rule names, at its time, as the
// release's money paths and its migration write them, so the ledger grows with its books (two rows per entry and their
// index entries). A wallet leg's running balance is summed within its fill batch, in time order: the generated ledger
// has no wallets and is never audited, so the figure only has to take a posting's room.
// $1 the newest entry id before the batch.
const FILL_POSTINGS_SQL = `
INSERT INTO ledger_postings (user_id, entry_id, event, account, amount_minor, currency, balance_after_minor, posted_at)
SELECT e.user_id, e.id, 'move', leg.account, leg.amount_minor, e.currency,
       CASE WHEN leg.account = 'wallet'
            THEN SUM(leg.amount_minor) FILTER (WHERE leg.account = 'wallet')
                   OVER (PARTITION BY e.user_id ORDER BY e.created_at, e.id ROWS UNBOUNDED PRECEDING)
       END,
       e.created_at
  FROM ledger_entries e
  JOIN ledger_journal_rules r ON r.type = e.type AND r.event = 'move'
 CROSS JOIN LATERAL (VALUES (r.from_account, -e.amount_minor), (r.to_account, e.amount_minor)) AS leg (account, amount_minor)
 WHERE e.id > $1::bigint`;

/**
 * Grows the ledger to `targetRows` generated rows (from `currentRows`) with INSERT ... SELECT generate_series, then
 * ANALYZE and CHECKPOINT so the measurement after it starts from settled statistics and a quiet disk.
 * Returns the seconds it took.
 */
export async function fillLedger(db: Pool, currentRows: number, targetRows: number): Promise<number> {
  const startedMs = Date.now();
  for (let from = currentRows + 1; from <= targetRows; from += FILL_BATCH_ROWS) {
    const to = Math.min(targetRows, from + FILL_BATCH_ROWS - 1);
    const maxId = await db.query<{ max: string | null }>("SELECT max(id)::text AS max FROM ledger_entries");
    await db.query(FILL_ENTRIES_SQL, [from, to, SCALE_USERS]);
    await db.query(FILL_TRANSITIONS_SQL, [maxId.rows[0]?.max ?? "0"]);
    await db.query(FILL_POSTINGS_SQL, [maxId.rows[0]?.max ?? "0"]);
  }
  await db.query("ANALYZE ledger_entries");
  await db.query("ANALYZE ledger_transitions");
  await db.query("ANALYZE ledger_postings");
  await db.query("CHECKPOINT");
  return (Date.now() - startedMs) / 1000;
}

function claimRequest(refId: string) {
  const userId = `s${1 + Math.floor(Math.random() * SCALE_USERS)}`;
  return {
    key: operationKey(userId, "reward", refId),
    amountMinor: 100,
    currency: "USD",
    params: { amount: 100, currency: "USD" },
    leaseOwner: WORKER_ID,
    // The lease only matters to the reconciler, which does not run here.
    leaseMs: 30_000,
    actor: "request" as const,
  };
}

/** Times `count` sequential claims of fresh keys on `db`, ref ids `m<tag>-<first>` onwards; returns their latencies. */
async function timeClaims(db: Pool, tag: string, first: number, count: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let index = first; index < first + count; index++) {
    const t0 = performance.now();
    const entry = await insertClaim(db, claimRequest(`m${tag}-${index}`));
    const elapsed = performance.now() - t0;
    if (!entry) throw new Error("bench: a fresh claim lost");
    latencies.push(elapsed);
  }
  return latencies;
}

/**
 * Times {@link MEASURED_CLAIMS} sequential claims of fresh keys on each of `base` (the 10,000-row ledger) and `grown`
 * (`grownRows` rows), after {@link WARMUP_CLAIMS} unmeasured ones on each, in {@link MEASURED_ROUNDS} rounds per
 * database whose order alternates (base, grown, grown, base, ...), and one EXPLAIN (ANALYZE, BUFFERS) of the claim on
 * each. `tag` keeps ref ids of two comparisons apart. Returns the two points; the grown one carries the base's p50 of
 * the same rounds as `baseP50Ms`.
 */
export async function measureClaims(
  base: Pool,
  grown: Pool,
  grownRows: number,
  tag: string,
  fillSeconds: { readonly base: number; readonly grown: number },
): Promise<{ base: ScalePoint; grown: ScalePoint }> {
  const sides = [
    { db: base, tag: `b${tag}`, latencies: [] as number[] },
    { db: grown, tag: `g${tag}`, latencies: [] as number[] },
  ];
  for (const side of sides) await timeClaims(side.db, side.tag, 0, WARMUP_CLAIMS);
  const perRound = MEASURED_CLAIMS / MEASURED_ROUNDS;
  for (let round = 0; round < MEASURED_ROUNDS; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order)
      side.latencies.push(...(await timeClaims(side.db, side.tag, WARMUP_CLAIMS + round * perRound, perRound)));
  }
  const [baseSide, grownSide] = sides as [(typeof sides)[0], (typeof sides)[0]];
  const basePoint: ScalePoint = {
    ledgerRows: SCALE_BASE_ROWS,
    claims: baseSide.latencies.length,
    p50Ms: percentile(baseSide.latencies, 50)!,
    p99Ms: percentile(baseSide.latencies, 99)!,
    plan: await explainClaim(base, `e${baseSide.tag}`),
    fillSeconds: fillSeconds.base,
  };
  return {
    base: basePoint,
    grown: {
      ledgerRows: grownRows,
      claims: grownSide.latencies.length,
      p50Ms: percentile(grownSide.latencies, 50)!,
      p99Ms: percentile(grownSide.latencies, 99)!,
      baseP50Ms: basePoint.p50Ms,
      plan: await explainClaim(grown, `e${grownSide.tag}`),
      fillSeconds: fillSeconds.grown,
    },
  };
}

/** EXPLAIN (ANALYZE, BUFFERS) of the claim's own statement, captured from insertClaim and run once more. */
async function explainClaim(db: Pool, refId: string): Promise<string> {
  let captured: { text: string; values: unknown[] } | null = null;
  const capture = {
    // lib/ledger sends named statements as a config object ({ name, text, values }); accept both forms.
    query: async (textOrConfig: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
      captured =
        typeof textOrConfig === "string"
          ? { text: textOrConfig, values: values ?? [] }
          : { text: textOrConfig.text, values: textOrConfig.values ?? [] };
      return { rows: [], command: "", rowCount: 0, oid: 0, fields: [] };
    },
  };
  // The recording connection answers "no row", which insertClaim reports as a lost claim: only the text matters.
  await insertClaim(capture as never, claimRequest(refId));
  const statement = captured as { text: string; values: unknown[] } | null;
  if (!statement) throw new Error("bench: insertClaim sent no statement");
  const result = await db.query<{ "QUERY PLAN": string }>(
    `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${statement.text}`,
    statement.values,
  );
  return result.rows.map((row) => row["QUERY PLAN"]).join("\n");
}
