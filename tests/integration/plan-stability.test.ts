/**
 * C25: a plan made on an empty ledger must not stick. The app's sessions keep their named (prepared) statements
 * for as long as the connection lives, and once PostgreSQL settles on a statement's generic plan it keeps it
 * until an ANALYZE invalidates it. A money-path statement whose generic plan, made on an empty ledger, scans the
 * table would then scan every row of a growing ledger per operation.
 *
 * Staged without timing: a fresh migrated database whose money tables autovacuum may not touch (so no ANALYZE
 * can replan in between), one session with `plan_cache_mode = force_generic_plan` (the setting the app's own
 * sessions run with, lib/db.ts: the default `auto` re-plans each execution while custom plans look cheaper, and on
 * a young ledger's statistics such a plan read a top-up through (type, created_at), every top-up there is), the
 * money path run through lib/ on that session, the ledger filled to 100k rows, the money path run
 * again, and then the cached plan of every named statement read with `EXPLAIN EXECUTE`.
 *
 * The payment's statements run inside the PL/pgSQL function ledger_decide_payment, and a top-up's admission inside
 * ledger_admit_topup; PL/pgSQL caches their plans per session as named statements are cached but lists them
 * nowhere: they are read from auto_explain, loaded on the session with its nested statements sent to the client as
 * notices, while a payment and two admissions (one with room, one without) run on the filled ledger.
 *
 * Negative controls: the credit transition as it was written before (its UPDATE joined to the locked row instead
 * of naming the key) is prepared on the same session at the same moment and must be caught scanning the ledger; a
 * function made for the control, planned with the real one, must be caught scanning through the notices.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findEntryByKey, insertClaim } from "../../lib/ledger/claim";
import { jsonStoredResponse, succeededPaymentResponse, succeededRewardResponse } from "../../lib/ledger/views";
import {
  attachCharge,
  completeEntry,
  failEntry,
  getEntryById,
  markProcessing,
  storeResponse,
} from "../../lib/ledger/transitions";
import { migrate } from "../../lib/migrate";
import { landBankEntry, noteDisputeStatus } from "../../lib/ledger/dispute-entries";
import { claimRefund, releaseReservation } from "../../lib/ledger/refunds";
import { jsonResponseTemplate } from "../../lib/ledger/response-template";
import { decidePaymentUnderWalletLock } from "../../lib/ledger/payment-statement";
import { admitTopupUnderWalletLock, claimAndAdmitTopup } from "../../lib/ledger/topup-admission";
import type { LedgerEntry } from "../../lib/ledger/entry";
import { readRewardDayCredited } from "../../lib/rewards/read-reward-day-credited";
import { decideRewardUnderWalletLock } from "../../lib/ledger/reward-statement";
import type { OperationKey } from "../../lib/ledger/keys";
import { pool } from "../../lib/db";
import { settleFromWebhook } from "../../lib/ledger/webhook-settlement";
import { createScratchDatabase, dropScratchDatabases } from "../helpers/db";
import { claimRequest } from "../helpers/ledger";

/** The tables the money path reads; autovacuum (and so its ANALYZE) is off for them in the scratch database. */
const MONEY_TABLES = ["ledger_entries", "ledger_transitions", "wallets", "reward_cap_days"] as const;

/** Every named statement the money path below sends; the check fails when one of them was not prepared. */
const MONEY_PATH_STATEMENTS = [
  "ledger_insert_claim",
  "ledger_transition",
  "ledger_attach_charge",
  "ledger_store_response",
  "ledger_select_by_id",
  "ledger_select_by_key",
  "ledger_decide_payment",
  "ledger_admit_topup",
  "ledger_claim_topup",
  "webhook_settle_entry",
  "ledger_decide_reward",
  "ledger_claim_refund",
  "ledger_release_reservation",
  "ledger_note_dispute",
  "ledger_land_bank_entry",
  "reward_cap_day_read",
];

/** The debt body of a payment: the wallet's debt is its template's slot. */
const debtTemplate = () => jsonResponseTemplate(402, (debt) => ({ code: "debt_outstanding", debt }));

const FILL_USERS = 1000;
const FILL_ROWS = 100_000;
const CONTROL_STATEMENT = "c25_join_bound_transition";
/**
 * A transition of the shape the ledger once sent (before docs/decisions/045): the row to move named by a join to the
 * row it locked, not by its key. A join condition is an index condition only when the planner expects the joined
 * table to be large, so the generic plan made on an empty ledger kept a nested loop that scanned every row per credit.
 * Prepared for the negative control: the check must catch it.
 */
const JOIN_BOUND_TRANSITION = `
WITH prev AS (
  SELECT user_id, id, status FROM ledger_entries WHERE user_id = $1 AND id = $2 FOR UPDATE
), moved AS (
  UPDATE ledger_entries e
     SET status = $3::text,
         failure_reason = $4,
         bank_charge_id = COALESCE($5, e.bank_charge_id),
         lease_owner = CASE WHEN $3::text IN ('succeeded', 'failed') THEN NULL ELSE e.lease_owner END,
         lease_expires_at = CASE WHEN $3::text IN ('succeeded', 'failed') THEN NULL ELSE e.lease_expires_at END,
         updated_at = now()
    FROM prev
   WHERE e.user_id = prev.user_id AND e.id = prev.id
     AND e.status = ANY ($10::text[])
     AND ($6::int IS NULL OR e.attempt = $6::int)
  RETURNING e.user_id, e.id, e.amount_minor, e.currency, e.status, e.attempt, prev.status AS from_status
), credited AS (
  INSERT INTO wallets (user_id, balance_minor, currency)
  SELECT user_id, amount_minor, currency FROM moved WHERE $7::boolean
  ON CONFLICT (user_id) DO UPDATE
     SET balance_minor = wallets.balance_minor + GREATEST(EXCLUDED.balance_minor - wallets.debt_minor, 0),
         debt_minor = GREATEST(wallets.debt_minor - EXCLUDED.balance_minor, 0),
         updated_at = now()
  RETURNING balance_minor
), logged AS (
  INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
  SELECT user_id, id, from_status, status, $8, attempt, $9 FROM moved
)
SELECT moved.*, (SELECT balance_minor FROM credited) AS balance_minor FROM moved`;
/** A PL/pgSQL function made in the scratch database for the negative control: it looks a row up by ref_id alone. */
const CONTROL_FUNCTION = `CREATE FUNCTION c25_control_lookup(p_ref_id text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM ledger_entries WHERE ref_id = p_ref_id);
END
$$`;

/** A nested statement's plan as auto_explain reported it. */
interface ExplainedStatement {
  readonly text: string;
  readonly plan: PlanNode;
}

/**
 * Runs `work` on `session` with auto_explain reporting every statement's plan, nested ones included (the statements
 * a PL/pgSQL function runs), as notices, and returns those plans. The library is loaded for this session only.
 */
async function explainedDuring(session: pg.Client, work: () => Promise<unknown>): Promise<ExplainedStatement[]> {
  await session.query("LOAD 'auto_explain'");
  for (const setting of [
    "auto_explain.log_min_duration = 0",
    "auto_explain.log_nested_statements = on",
    "auto_explain.log_format = json",
    "auto_explain.log_level = notice",
    "client_min_messages = notice",
  ])
    await session.query(`SET ${setting}`);
  const explained: ExplainedStatement[] = [];
  const onNotice = (notice: { message?: string }) => {
    const message = notice.message ?? "";
    const start = message.indexOf("{");
    if (!message.startsWith("duration:") || start < 0) return;
    const report = JSON.parse(message.slice(start)) as { "Query Text": string; Plan: PlanNode };
    explained.push({ text: report["Query Text"], plan: report.Plan });
  };
  session.on("notice", onNotice);
  try {
    await work();
  } finally {
    session.off("notice", onNotice);
    await session.query("SET auto_explain.log_min_duration = -1");
  }
  return explained;
}

/**
 * Asserts that a function's statements reported through auto_explain include one containing each of `texts`, and
 * that none of their plans scans a whole table ({@link fullScans}). `what` names the function in the messages.
 */
function expectReportedWithoutScans(what: string, statements: ExplainedStatement[], texts: readonly string[]): void {
  for (const text of texts)
    expect(
      statements.some((s) => s.text.includes(text)),
      `the ${what}'s statement with ${text} was not reported`,
    ).toBe(true);
  expect(statements.flatMap((s) => fullScans(s.text.slice(0, 80), s.plan))).toEqual([]);
}

/** A scan the plan should not contain: a whole-table read, or an index read bound by nothing. */
interface PlanFinding {
  readonly statement: string;
  readonly node: string;
  readonly relation: string;
  readonly index: string | null;
}

interface PlanNode {
  readonly "Node Type": string;
  readonly "Relation Name"?: string;
  readonly "Index Name"?: string;
  readonly "Index Cond"?: string;
  readonly Plans?: readonly PlanNode[];
}

/**
 * Whether an index condition narrows the read to what this execution asks for. On the money tables every read is one
 * user's, so the condition must bind `user_id` (a key lookup read through another index, e.g. `(type = $2)`,
 * reads every row of that type: case C25, docs/decisions/045). Elsewhere it must name a parameter (`$1`; PL/pgSQL
 * variables are parameters too) or another relation's column (the inner side of a join, `prev.id`): a condition on
 * constants alone, such as `(type = 'topup'::text)`, reads every row of that kind, whoever asks.
 */
function isBoundCondition(relation: string | undefined, condition: string | undefined): boolean {
  if (!condition) return false;
  const withoutLiterals = condition.replace(/'(?:[^']|'')*'/g, "''");
  if ((MONEY_TABLES as readonly string[]).includes(relation ?? "")) return /\buser_id = /.test(withoutLiterals);
  return /\$\d/.test(withoutLiterals) || /\b[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*\b/.test(withoutLiterals);
}

/**
 * Walks a JSON plan and returns its full scans: Seq Scan nodes, and index scans whose condition binds nothing of the
 * execution's own ({@link isBoundCondition}).
 */
function fullScans(statement: string, node: PlanNode): PlanFinding[] {
  const own: PlanFinding[] = [];
  const type = node["Node Type"];
  const isIndexScan = type === "Index Scan" || type === "Index Only Scan" || type === "Bitmap Index Scan";
  if (type === "Seq Scan" || (isIndexScan && !isBoundCondition(node["Relation Name"], node["Index Cond"]))) {
    own.push({ statement, node: type, relation: node["Relation Name"] ?? "?", index: node["Index Name"] ?? null });
  }
  return [...own, ...(node.Plans ?? []).flatMap((child) => fullScans(statement, child))];
}

/**
 * The plan the session would run for each of its prepared statements now (the cached generic plan under
 * force_generic_plan), as `EXPLAIN EXECUTE name(NULL, ...)`: the values do not matter to a generic plan.
 */
async function cachedPlans(session: pg.Client): Promise<Map<string, PlanNode>> {
  const statements = await session.query<{ name: string; parameters: number }>(
    "SELECT name, cardinality(parameter_types) AS parameters FROM pg_prepared_statements ORDER BY name",
  );
  const plans = new Map<string, PlanNode>();
  for (const { name, parameters } of statements.rows) {
    const args = parameters > 0 ? `(${Array.from({ length: parameters }, () => "NULL").join(", ")})` : "";
    const explained = await session.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) EXECUTE ${session.escapeIdentifier(name)}${args}`,
    );
    plans.set(name, explained.rows[0]!["QUERY PLAN"][0].Plan);
  }
  return plans;
}

/** The admission of `entry` (a claimed top-up) under a ceiling of `maxBalanceMinor`. */
function admission(entry: LedgerEntry, maxBalanceMinor: number) {
  return {
    ref: { userId: entry.userId, entryId: entry.id },
    amountMinor: entry.amountMinor,
    currency: entry.currency,
    fencingToken: entry.fencingToken,
    actor: "request" as const,
    maxBalanceMinor,
    refusal: jsonStoredResponse(422, { code: "balance_limit_exceeded" }),
  };
}

let rewardDays = 0;
/** A day no earlier reward of the test counted against (each round's first reward must fit under the cap of 5). */
function nextRewardDay(): string {
  rewardDays += 1;
  return `2026-02-${String(rewardDays).padStart(2, "0")}`;
}

/** A reward of 5 for `key` on `day` under a cap of `capMinor` and a ceiling of `maxBalanceMinor`, on `session`. */
function reward(session: pg.Client, key: OperationKey, day: string, capMinor: number, maxBalanceMinor = 1e12) {
  return decideRewardUnderWalletLock(session, {
    key,
    amountMinor: 5,
    currency: "USD",
    params: { adId: key.refId, day, amount: 5, currency: "USD" },
    day,
    capMinor,
    maxBalanceMinor,
    succeeded: succeededRewardResponse({ adId: key.refId, day }, 5, "USD"),
    refusal: jsonStoredResponse(422, { code: "balance_limit_exceeded" }),
  });
}

/**
 * One round of every money-path statement on `session`, through lib/: a top-up's claim, admission, charge id,
 * credit and stored response (twice: the second finds it stored), a read by key; a payment decided in one
 * statement (covered, its key again, not covered); a failed claim; a refund claimed and given back, a dispute noted and
 * its chargeback landed; a reward decided in one
 * statement (credited, its key again, past the day's cap, without room) and the day's read.
 */
async function moneyPathRound(session: pg.Client, userId: string): Promise<void> {
  const topupRequest = claimRequest(userId, { type: "topup" });
  const topup = await insertClaim(session, topupRequest);
  if (!topup) throw new Error("C25: a fresh top-up key was not claimed");
  const topupRef = { userId, entryId: topup.id };
  const admitted = await admitTopupUnderWalletLock(session, admission(topup, Number.MAX_SAFE_INTEGER));
  if (admitted.status !== "processing") throw new Error("C25: the top-up was not admitted");
  await attachCharge(topupRef, `ch_${randomUUID()}`, session);
  const credited = await completeEntry(
    topupRef,
    { actor: "request", guard: { kind: "lease", fencingToken: topup.fencingToken }, credit: true },
    session,
  );
  if (credited.kind !== "moved") throw new Error("C25: the credit was refused");
  await storeResponse(topupRef, jsonStoredResponse(201, { id: topup.id }), session);
  await storeResponse(topupRef, jsonStoredResponse(201, { id: topup.id }), session);
  await findEntryByKey(topupRequest.key, session);
  // The webhook's common case: a signed success credited by key in one statement, with its event record.
  const webhookTopup = await insertClaim(session, claimRequest(userId, { type: "topup" }));
  if (!webhookTopup) throw new Error("C25: a fresh top-up key was not claimed");
  const webhookCredited = await settleFromWebhook(
    {
      entryType: "topup",
      userId,
      refId: webhookTopup.refId,
      eventId: `evt_${randomUUID()}`,
      eventType: "charge.succeeded",
      merchantRef: `topup:${userId}:${webhookTopup.refId}`,
      bankId: `ch_${randomUUID()}`,
      amountMinor: webhookTopup.amountMinor,
      currency: webhookTopup.currency,
      payload: "{}",
    },
    session,
  );
  if (!webhookCredited) throw new Error("C25: the one-statement credit was refused");
  // The request's path: claim and admission in one statement (docs/decisions/044); its key again gets nothing.
  const requestTopup = claimRequest(userId, { type: "topup" });
  const ceiling = { maxBalanceMinor: Number.MAX_SAFE_INTEGER, refusal: jsonStoredResponse(422, { code: "x" }) };
  if ((await claimAndAdmitTopup(session, requestTopup, ceiling))?.status !== "processing")
    throw new Error("C25: the top-up was not claimed and admitted");
  if ((await claimAndAdmitTopup(session, requestTopup, ceiling)) !== null)
    throw new Error("C25: a taken top-up key was claimed again");

  // A payment decided in one call of the function ledger_decide_payment, in autocommit as the app sends it
  // (docs/decisions/040): one that the wallet covers, the same key again (taken:
  // no row back), and one the wallet cannot cover (a stored 402).
  const paymentKey = claimRequest(userId, { type: "payment", amountMinor: 10 }).key;
  const payment = async (amountMinor: number, key = paymentKey) => {
    const decided = await decidePaymentUnderWalletLock(session, {
      key,
      amountMinor,
      currency: "USD",
      params: { amount: amountMinor, currency: "USD" },
      responses: {
        succeeded: succeededPaymentResponse(key.refId, amountMinor, "USD"),
        insufficientFunds: jsonStoredResponse(402, { code: "insufficient_funds" }),
        debtOutstanding: debtTemplate(),
      },
    });
    return decided;
  };
  if ((await payment(10))?.entry.status !== "succeeded") throw new Error("C25: the payment found no funds");
  if ((await payment(10)) !== null) throw new Error("C25: a taken payment key was claimed again");
  const short = await payment(1_000_000_000, claimRequest(userId, { type: "payment" }).key);
  if (short?.entry.status !== "failed") throw new Error("C25: a payment the wallet cannot cover succeeded");

  const failing = await insertClaim(session, claimRequest(userId, { type: "topup" }));
  if (!failing) throw new Error("C25: a fresh key was not claimed");
  await markProcessing({ userId, entryId: failing.id }, failing.fencingToken, { db: session });
  await failEntry(
    { userId, entryId: failing.id },
    { actor: "webhook", guard: { kind: "status_only" }, reason: "declined_by_bank" },
    session,
  );
  await getEntryById({ userId, entryId: failing.id }, session);

  // A refund of the credited top-up, claimed and given back (contract section 11); then a dispute of it noted, and
  // its chargeback landed (section 12); the next round's top-up credit repays any debt it leaves.
  const refusal = jsonStoredResponse(402, { code: "x" });
  const refund = await claimRefund(
    {
      key: claimRequest(userId, { type: "refund" }).key,
      topupEntryId: topup.id,
      amountMinor: 1,
      currency: "USD",
      params: { amount: 1, currency: "USD", topupRefId: topup.refId },
      leaseOwner: "c25",
      leaseMs: 30_000,
      actor: "admin",
      refusals: { insufficientFunds: refusal, debtOutstanding: refusal, exceedsTopup: refusal, topupDisputed: refusal },
    },
    session,
  );
  if (refund.kind !== "reserved") throw new Error(`C25: the refund was ${refund.kind}`);
  if ((await releaseReservation(topupRef, { actor: "webhook", detail: "C25" }, session)).kind !== "unchanged")
    throw new Error("C25: a top-up was released as a refund");
  const refundRef = { userId, entryId: refund.entry.id };
  if ((await releaseReservation(refundRef, { actor: "webhook", detail: "C25" }, session)).kind !== "released")
    throw new Error("C25: the refund was not given back");
  await noteDisputeStatus(session, { userId, id: topup.id }, "lost");
  const disputeId = `dp_${randomUUID().replaceAll("-", "")}`;
  const chargeback = await landBankEntry(session, {
    key: { userId, type: "chargeback", refId: disputeId },
    amountMinor: 1,
    currency: "USD",
    params: { amount: 1, currency: "USD", chargeId: "ch_c25" },
    actor: "reconciler",
    detail: "C25",
  });
  if (!chargeback) throw new Error("C25: the chargeback was not landed");

  // A reward decided in one call of ledger_decide_reward (docs/decisions/047): one that fits, its key again (taken),
  // one past the day's cap (refused, rolled back), and one without room under the ceiling (a stored 422).
  const day = nextRewardDay();
  const rewardKey = claimRequest(userId, { type: "reward" }).key;
  if ((await reward(session, rewardKey, day, 5)).kind !== "decided") throw new Error("C25: the reward was not decided");
  if ((await reward(session, rewardKey, day, 5)).kind !== "lost")
    throw new Error("C25: a taken reward key was claimed again");
  if ((await reward(session, claimRequest(userId, { type: "reward" }).key, day, 5)).kind !== "over_cap")
    throw new Error("C25: a reward past the day's cap was credited");
  const noRoom = await reward(session, claimRequest(userId, { type: "reward" }).key, day, 5, 0);
  if (noRoom.kind !== "decided" || noRoom.entry.status !== "failed")
    throw new Error("C25: a reward without room was credited");
  await readRewardDayCredited(userId, day, session);
}

describe("C25: the app's sessions run the plans checked here", () => {
  it("lib/db's pool runs every named statement on its generic plan (plan_cache_mode = force_generic_plan)", async () => {
    const { rows } = await pool().query<{ plan_cache_mode: string }>("SHOW plan_cache_mode");
    expect(rows[0]?.plan_cache_mode).toBe("force_generic_plan");
  });
});

describe("C25: money-path plans survive a ledger that grows after they were made", () => {
  let session: pg.Client;
  let admin: pg.Client;
  let userId: string;
  let plans: Map<string, PlanNode>;
  let controlText: string;
  let paymentStatements: ExplainedStatement[];
  let admissionStatements: ExplainedStatement[];
  let controlStatements: ExplainedStatement[];
  let rewardStatements: ExplainedStatement[];

  beforeAll(async () => {
    const url = await createScratchDatabase("c25");
    await migrate(url);
    admin = new pg.Client({ connectionString: url, application_name: "c25-fill" });
    await admin.connect();
    for (const table of MONEY_TABLES) await admin.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
    userId = `c25_${randomUUID().replaceAll("-", "")}`;
    await admin.query(`INSERT INTO "user" (id, name, email) VALUES ($1, 'C25', $1 || '@example.test')`, [userId]);

    session = new pg.Client({ connectionString: url, application_name: "c25-app" });
    await session.connect();
    await session.query("SET plan_cache_mode = force_generic_plan");
    for (let round = 0; round < 3; round++) await moneyPathRound(session, userId);

    // The negative control, prepared on the same session at the same moment as the real statements: the shape the
    // transition once had, its row named by a join to its locked row instead of by key (case C25).
    controlText = JOIN_BOUND_TRANSITION;
    await session.query(`PREPARE ${CONTROL_STATEMENT} AS ${controlText}`);
    await cachedPlans(session);
    await admin.query(CONTROL_FUNCTION);
    await session.query("SELECT c25_control_lookup('none')");

    const before = await admin.query<{ reltuples: number }>(
      "SELECT reltuples FROM pg_class WHERE relname = 'ledger_entries'",
    );
    // Never analyzed (-1): the state of a ledger just deployed, which the cached plans were made on.
    expect(before.rows[0]?.reltuples).toBe(-1);

    await admin.query(
      `INSERT INTO "user" (id, name, email)
       SELECT 'c25_fill_' || i, 'C25 fill', 'c25_fill_' || i || '@example.test' FROM generate_series(1, $1::int) AS i`,
      [FILL_USERS],
    );
    await admin.query(
      `INSERT INTO wallets (user_id, balance_minor, currency)
       SELECT 'c25_fill_' || i, 1000, 'USD' FROM generate_series(1, $1::int) AS i`,
      [FILL_USERS],
    );
    await admin.query(
      `INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status)
       SELECT 'c25_fill_' || (1 + i % $1::int), 'payment', 'fill-' || i, 100, 'USD', repeat('a', 64), '{}', 'succeeded'
         FROM generate_series(1, $2::int) AS i`,
      [FILL_USERS, FILL_ROWS],
    );
    await admin.query(
      `INSERT INTO reward_cap_days (user_id, day, credited_minor)
       SELECT 'c25_fill_' || (1 + i % $1::int), '2025-' || lpad((1 + i / $1::int % 12)::text, 2, '0') || '-01', 5
         FROM generate_series(0, 9999) AS i ON CONFLICT DO NOTHING`,
      [FILL_USERS],
    );

    // The same session goes on working on the filled ledger with the plans it made on the empty one.
    await moneyPathRound(session, userId);
    plans = await cachedPlans(session);
    const paymentKey = claimRequest(userId, { type: "payment", amountMinor: 10 }).key;
    paymentStatements = await explainedDuring(session, () =>
      decidePaymentUnderWalletLock(session, {
        key: paymentKey,
        amountMinor: 10,
        currency: "USD",
        params: { amount: 10, currency: "USD" },
        responses: {
          succeeded: succeededPaymentResponse(paymentKey.refId, 10, "USD"),
          insufficientFunds: jsonStoredResponse(402, { code: "insufficient_funds" }),
          debtOutstanding: debtTemplate(),
        },
      }),
    );
    admissionStatements = await explainedDuring(session, async () => {
      for (const maxBalanceMinor of [Number.MAX_SAFE_INTEGER, 0]) {
        const refusal = jsonStoredResponse(422, { code: "balance_limit_exceeded" });
        const admitted = await claimAndAdmitTopup(session, claimRequest(userId, { type: "topup" }), {
          maxBalanceMinor,
          refusal,
        });
        if (admitted?.status !== (maxBalanceMinor > 0 ? "processing" : "failed"))
          throw new Error(`C25: the claim and admission under ${maxBalanceMinor} left the row ${admitted?.status}`);
        // The admission alone, of a row claimed `initiated` (the reconciler's re-drive).
        const claimed = await insertClaim(session, claimRequest(userId, { type: "topup" }));
        if (!claimed) throw new Error("C25: a fresh top-up key was not claimed");
        await admitTopupUnderWalletLock(session, admission(claimed, maxBalanceMinor));
      }
    });
    rewardStatements = await explainedDuring(session, async () => {
      const day = nextRewardDay();
      await reward(session, claimRequest(userId, { type: "reward" }).key, day, 5);
      await reward(session, claimRequest(userId, { type: "reward" }).key, day, 10, 0);
    });
    controlStatements = await explainedDuring(session, () => session.query("SELECT c25_control_lookup('none')"));
  });

  afterAll(async () => {
    await session?.end().catch(() => {});
    await admin?.end().catch(() => {});
    await dropScratchDatabases();
  });

  it("the ledger grew to 100k rows with no ANALYZE in between (the cached plans are the empty ledger's)", async () => {
    const after = await admin.query<{ reltuples: number; rows: number }>(
      "SELECT reltuples, (SELECT count(*)::int FROM ledger_entries) AS rows FROM pg_class WHERE relname = 'ledger_entries'",
    );
    // Four rounds of ten rows; then, read through auto_explain, the payment, the two claims with their admissions,
    // two admissions alone, and two rewards.
    expect(after.rows[0]).toEqual({ reltuples: -1, rows: FILL_ROWS + 4 * 10 + 7 });
  });

  it("every money-path statement was prepared on the session, and none of their plans scans a whole table", () => {
    expect([...plans.keys()]).toEqual(expect.arrayContaining(MONEY_PATH_STATEMENTS));
    const findings = MONEY_PATH_STATEMENTS.flatMap((name) => fullScans(name, plans.get(name)!));
    expect(findings).toEqual([]);
  });

  it("the payment function's own statements and its helpers', planned by PL/pgSQL on the empty ledger, scan no table", () => {
    const texts = [
      "FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE",
      "ON CONFLICT (user_id, type, ref_id) DO NOTHING",
      "INSERT INTO ledger_transitions",
      "SET balance_minor = w.balance_minor - p_entry.amount_minor",
      "INSERT INTO ledger_postings",
    ];
    expectReportedWithoutScans("payment", paymentStatements, texts);
  });

  it("the top-up claim and admission functions' own statements and their helpers' (with room and without), planned on the empty ledger, scan no table", () => {
    const texts = [
      "ON CONFLICT (user_id, type, ref_id) DO NOTHING",
      "FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE",
      "sum(e.amount_minor)",
      "SET status = p_to_status",
      "SET response_status = p_response_status",
      "INSERT INTO ledger_transitions",
    ];
    expectReportedWithoutScans("admission", admissionStatements, texts);
  });

  it("the reward function's own statements and its helpers' (credited and without room), planned on the empty ledger, scan no table", () => {
    const texts = [
      "FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE",
      "sum(e.amount_minor)",
      "INSERT INTO reward_cap_days",
      "ON CONFLICT (user_id) DO UPDATE",
    ];
    expectReportedWithoutScans("reward", rewardStatements, texts);
    // Only the credited reward counts the day's row; the one without room is born failed and counts nothing.
    expect(rewardStatements.filter((s) => s.text.includes("INSERT INTO reward_cap_days"))).toHaveLength(1);
  });

  it("negative control: a function's statement that scans the ledger is caught through the notices", () => {
    const lookup = controlStatements.find((s) => s.text.includes("WHERE ref_id = p_ref_id"));
    expect(lookup).toBeDefined();
    expect(fullScans("control", lookup!.plan)).toContainEqual(
      expect.objectContaining({ node: "Seq Scan", relation: "ledger_entries" }),
    );
  });

  it("negative control: the credit transition joined to its locked row instead of naming the key scans the ledger", () => {
    expect(controlText).toContain("WHERE e.user_id = prev.user_id AND e.id = prev.id");
    const findings = fullScans(CONTROL_STATEMENT, plans.get(CONTROL_STATEMENT)!);
    expect(findings).toContainEqual({
      statement: CONTROL_STATEMENT,
      node: "Seq Scan",
      relation: "ledger_entries",
      index: null,
    });
  });

  it("negative control: a key lookup read through an index of every row of its type is caught, on a money table and off it", () => {
    // The plan node the one-statement credit's key lookup had on a young ledger before the index that led with the
    // type was replaced (bench run of 2026-12-01, docs/decisions/045), and the same read of a constant elsewhere.
    const throughType = {
      "Node Type": "Index Scan",
      "Relation Name": "ledger_entries",
      "Index Name": "ledger_entries_type_created_at_idx",
      "Index Cond": "(type = $2)",
    };
    const constantOnly = { ...throughType, "Relation Name": "bank_webhook_events", "Index Cond": "(type = 'x'::text)" };
    const byKey = { ...throughType, "Index Cond": "((user_id = $1) AND (type = $2) AND (ref_id = $3))" };
    expect(fullScans("control", { "Node Type": "LockRows", Plans: [throughType, constantOnly, byKey] })).toEqual([
      { statement: "control", node: "Index Scan", relation: "ledger_entries", index: throughType["Index Name"] },
      { statement: "control", node: "Index Scan", relation: "bank_webhook_events", index: throughType["Index Name"] },
    ]);
  });
});
