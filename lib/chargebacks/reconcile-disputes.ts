/**
 * The reconciler's dispute direction (contract section 12): reads the bank's disputes changed since this process's
 * cursor (`GET /disputes?since=`, paged) and applies every one through the same function as the webhook
 * (lib/chargebacks/apply-dispute.ts: an open or won one is noted on its top-up, a lost or reversed one lands), so a
 * dispute whose webhooks were lost still lands, and one whose webhook is being applied right now collides with it on
 * the claim instead of racing it.
 *
 * The cursor lives in memory per bank URL and scope, like the charge cursor (lib/reconciler/charge-cursor.ts): a new
 * process starts `lookBackMs` back and finds what it re-reads already applied (one claim that inserts nothing each).
 * It advances past a page only once every dispute on it was applied or reported.
 */
import type { BankCallOptions } from "../bank/client";
import { type BankDispute, getDispute, listDisputesSince } from "../bank/disputes";
import { parseMerchantRef } from "../bank/merchant-ref";
import { classifyDbError, type DbErrorVerdict } from "../ledger";
import { applyBankDispute } from "./apply-dispute";

/** The bank's largest page: fewest round trips per pass. */
const DISPUTE_PAGE_LIMIT = 1000;
/** Most pages read in one pass (10,000 disputes); the rest is read by the next pass from the cursor. */
const DISPUTE_PAGES_MAX = 10;

/**
 * Disputes whose work failed, kept per scope to be asked again (`GET /disputes/{id}`) at the start of every pass until
 * they land: the cursor has moved past them, and a lost dispute must not wait for the bank to change it again.
 * 1,000 per scope: far more than one pass can fail on without the database being down; past it the oldest is
 * dropped with a warning, and the audit's lost_disputes_charged_back still reports it.
 */
const DISPUTE_RETRIES_MAX = 1000;

const cursors = new Map<string, string>();
const retries = new Map<string, Set<string>>();

/** Forgets every dispute cursor and retry (tests; a process restart does the same). */
export function resetDisputeCursors(): void {
  cursors.clear();
  retries.clear();
}

export interface DisputePassOptions {
  readonly bank: BankCallOptions;
  /** Only these users' disputes (tests sharing a bank and a database); null for everyone. */
  readonly userIds: readonly string[] | null;
  /** How far back a fresh process reads, ms. */
  readonly lookBackMs: number;
  readonly logger: {
    info(object: Record<string, unknown>, message: string): void;
    warn(object: Record<string, unknown>, message: string): void;
  };
}

export interface DisputePassResult {
  /** Disputes read from the bank (in scope). */
  listed: number;
  /** Entries this pass landed (chargebacks and reversals). */
  landed: number;
  /** Disputes that moved nothing and were reported (their detail is logged). */
  anomalies: number;
  /** Why the listing stopped early (the bank did not answer), or null. */
  bankUnreachable: string | null;
  /** Disputes of earlier passes whose work had failed and that landed in this one (asked again by id). */
  retried: number;
  /**
   * Disputes whose entries the database refused or failed to write (also counted in `anomalies`), each named for the
   * reconciler's report (contract section 5: its merchant reference and charge id; case C29).
   */
  errors: DisputeError[];
}

/** One dispute the pass could not apply because its work threw. */
export interface DisputeError {
  readonly disputeId: string;
  /** The disputed charge's merchant reference and id, as the bank reports them. */
  readonly merchantRef: string;
  readonly chargeId: string;
  /** One sentence: the database's verdict (SQLSTATE or constraint), not a stack. */
  readonly detail: string;
}

/**
 * One pass over the bank's changed disputes. Returns the counts, and the disputes whose work failed. One dispute's
 * failure (a constraint, a statement timeout, an unexpected SQLSTATE, a bug) is logged naming it, its merchant
 * reference and charge id, reported in `errors`, and the pass goes on with the next dispute (case C29); the failed
 * dispute is asked for again by id at the start of every later pass until it lands. Throws only a lost database
 * connection (the reconciler then checks whether the database can be reached at all).
 */
export async function reconcileDisputes(options: DisputePassOptions): Promise<DisputePassResult> {
  const result: DisputePassResult = {
    listed: 0,
    landed: 0,
    anomalies: 0,
    bankUnreachable: null,
    retried: 0,
    errors: [],
  };
  const scope = `${options.bank.bankUrl}|${options.userIds ? [...options.userIds].sort().join(",") : "*"}`;
  const failed = retries.get(scope) ?? new Set<string>();
  retries.set(scope, failed);
  for (const disputeId of [...failed]) {
    const looked = await getDispute(disputeId, options.bank);
    if (looked.kind === "unknown") {
      result.bankUnreachable = `${looked.reason}${looked.detail ? `: ${looked.detail}` : ""}`;
      return result;
    }
    if (looked.kind !== "found") {
      failed.delete(disputeId);
      continue;
    }
    if (await applyOne(looked.dispute, options, result)) {
      failed.delete(disputeId);
      result.retried += 1;
    }
  }
  let since = cursors.get(scope) ?? new Date(Date.now() - options.lookBackMs).toISOString();
  for (let page = 0; page < DISPUTE_PAGES_MAX; page++) {
    const listed = await listDisputesSince(since, { ...options.bank, limit: DISPUTE_PAGE_LIMIT });
    if (listed.kind !== "page") {
      result.bankUnreachable =
        listed.kind === "unknown" ? `${listed.reason}${listed.detail ? `: ${listed.detail}` : ""}` : listed.code;
      return result;
    }
    for (const dispute of listed.disputes) {
      const userId = parseMerchantRef(dispute.merchantRef)?.userId;
      if (options.userIds && (userId === undefined || !options.userIds.includes(userId))) continue;
      result.listed += 1;
      if (!(await applyOne(dispute, options, result))) remember(failed, dispute.id, options);
    }
    since = listed.nextCursor;
    cursors.set(scope, since);
    if (!listed.hasMore) break;
  }
  if (result.landed > 0 || result.anomalies > 0) options.logger.info({ disputes: result }, "reconciler: disputes");
  return result;
}

/**
 * Applies one dispute as the bank reports it (open and won ones move no money, but their state is noted on the
 * credited top-up: refunds wait), counting what it did in `result`. Returns false when its work threw anything but a
 * lost connection (logged and reported in `result.errors`); rethrows a lost connection.
 */
async function applyOne(
  dispute: BankDispute,
  options: DisputePassOptions,
  result: DisputePassResult,
): Promise<boolean> {
  try {
    const applied = await applyBankDispute(dispute, {
      actor: "reconciler",
      detail: `reconciler: dispute ${dispute.id} ${dispute.status} at the bank`,
    });
    if (applied.kind === "applied") {
      result.landed += applied.entries.filter((e) => e.result === "landed").length;
    } else if (applied.kind === "anomaly") {
      result.anomalies += 1;
      options.logger.warn({ disputeId: dispute.id, detail: applied.detail }, "reconciler: dispute anomaly");
    }
    return true;
  } catch (error) {
    const verdict = classifyDbError(error);
    if (verdict.kind === "connection_lost") throw error;
    result.anomalies += 1;
    result.errors.push({
      disputeId: dispute.id,
      merchantRef: dispute.merchantRef,
      chargeId: dispute.chargeId,
      detail: describeDisputeError(verdict, error),
    });
    options.logger.warn(
      { err: error, disputeId: dispute.id, merchantRef: dispute.merchantRef, chargeId: dispute.chargeId, verdict },
      "reconciler: a dispute's work failed; the pass goes on",
    );
    return false;
  }
}

/** Keeps `disputeId` to be asked again next pass, dropping the oldest past {@link DISPUTE_RETRIES_MAX}. */
function remember(failed: Set<string>, disputeId: string, options: DisputePassOptions): void {
  failed.add(disputeId);
  if (failed.size <= DISPUTE_RETRIES_MAX) return;
  const oldest = failed.values().next().value as string;
  failed.delete(oldest);
  options.logger.warn(
    { disputeId: oldest },
    "reconciler: too many failed disputes kept; the oldest is left to the audit",
  );
}

/** The database's verdict on a dispute's failed work, in one sentence: its kind, constraint or SQLSTATE. */
function describeDisputeError(verdict: DbErrorVerdict, error: unknown): string {
  if ("constraint" in verdict) {
    return `the database refused its entries (${verdict.kind}${verdict.constraint ? ` on ${verdict.constraint}` : ""})`;
  }
  if (verdict.kind === "retryable") return `the database aborted its entries (${verdict.sqlstate}) on every retry`;
  const code = (error as { code?: unknown } | null)?.code;
  return `its entries failed (${typeof code === "string" ? code : error instanceof Error ? error.name : "unknown error"})`;
}
