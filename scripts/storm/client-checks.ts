/**
 * The storm's client-side checks: what the clients saw, compared with itself, with the ledger and with the bank
 * (every 2xx body for the same key identical; no money moved without a 2xx seen or a succeeded row). Refunds are
 * operations like the others (keyed by the top-up owner and the refundId); chargebacks are explained by the bank's
 * disputes.
 * Each check returns its violations (bounded); the storm fails when any check has one.
 */
import type { ResponseBody } from "../lib/api-types";
import type { HttpOutcome } from "./http-client";
import {
  attemptKey,
  isStoredAnswer,
  parseJson,
  storedProblemCode,
  type AttemptRecord,
  type OperationRecord,
} from "./observations";

/** A 201 answer of any of the four operations, typed by the OpenAPI document (scripts/lib/api-types.ts). */
type OperationAnswer = Partial<
  ResponseBody<"/api/v1/topups", "post", 201> &
    ResponseBody<"/api/v1/payments", "post", 201> &
    ResponseBody<"/api/v1/rewards", "post", 201> &
    ResponseBody<"/api/v1/admin/topups/{userId}/{refId}/refunds", "post", 201>
>;

/**
 * The 201 of a payout or a transfer (lib/ledger/view-schemas.ts; not in the OpenAPI document yet): the fields the
 * checks read.
 */
interface MoneyOutAnswer {
  readonly payout?: { readonly amount: number; readonly status: string };
  readonly transfer?: { readonly amount: number; readonly status: string };
}

/** The operation inside a 2xx answer's body (its amount and status), or undefined when the body has none. */
function answerView(body: string): { amount: number; status: string } | undefined {
  const parsed = parseJson(body) as (OperationAnswer & MoneyOutAnswer) | undefined;
  return parsed?.topup ?? parsed?.payment ?? parsed?.reward ?? parsed?.refund ?? parsed?.payout ?? parsed?.transfer;
}

/** A ledger row as the checks need it (read by the storm with one query per run). */
export interface LedgerRow {
  readonly userId: string;
  /** The entry's id (`ledger_entries.id`): a `transfer_in`'s ref id is `transfer:<its transfer's entry id>`. */
  readonly entryId: string;
  /** `adjustment`: the credit of a top-up's charge that succeeded after the top-up failed; `refId` here is the
   * settled top-up's (the storm reads it through the adjustment's link; the entry itself is keyed by the charge id). */
  readonly type:
    | "topup"
    | "reward"
    | "payment"
    | "adjustment"
    | "refund"
    | "chargeback"
    | "chargeback_reversal"
    | "payout"
    | "payout_return"
    | "transfer"
    | "transfer_in";
  readonly refId: string;
  /** A refund's top-up (its refId, through `refunds_entry_id`); null for other types. */
  readonly topupRefId: string | null;
  readonly amountMinor: number;
  readonly status: "initiated" | "processing" | "succeeded" | "failed";
  readonly failureReason: string | null;
  readonly responseStatus: number | null;
  readonly responseBody: string | null;
}

/** A bank charge as listed by `GET /charges?since=` (docs/bank-sandbox.md). */
export interface BankCharge {
  /** The bank's charge id: an adjustment's ref id (contract section 5). */
  readonly id: string;
  readonly merchantRef: string;
  readonly amount: number;
  readonly status: "pending" | "succeeded" | "declined";
}

/** A bank dispute as listed by `GET /disputes?since=` (docs/bank-sandbox.md "Disputes"). */
export interface BankDisputeSeen {
  readonly id: string;
  readonly merchantRef: string;
  readonly amount: number;
  readonly status: "open" | "lost" | "won";
  readonly lostAt: string | null;
}

/** A bank payout as listed by `GET /payouts?since=` (docs/bank-sandbox.md "Payouts"). */
export interface BankPayoutSeen {
  readonly id: string;
  readonly merchantRef: string;
  readonly amount: number;
  readonly status: "pending" | "paid" | "failed" | "returned";
}

export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  /** What was looked at, e.g. "4210 keys". */
  readonly scope: string;
  readonly violations: string[];
}

/** Violations listed per check: enough to diagnose; the count says how many there were. */
const VIOLATIONS_LISTED_MAX = 20;

class Findings {
  readonly list: string[] = [];
  count = 0;
  add(message: string): void {
    this.count += 1;
    if (this.list.length < VIOLATIONS_LISTED_MAX) this.list.push(message);
  }
  result(name: string, scope: string): CheckResult {
    const violations = [...this.list];
    if (this.count > this.list.length) violations.push(`... and ${this.count - this.list.length} more`);
    return { name, ok: this.count === 0, scope, violations };
  }
}

interface KeyedAttempt {
  readonly operation: OperationRecord;
  readonly attempt: AttemptRecord;
}

/** Statuses that are refusals made before any row exists and that create none (contract section 3). */
const NON_STORED_REFUSALS = new Set([400, 401, 403, 413, 415, 422, 429, 503]);

/**
 * Runs every client-side check. `rows` are the ledger rows of the storm's users; `charges` the bank's charges
 * (any user; filtered by merchant reference here). Returns one result per check, in a stable order.
 */
export function runClientChecks(
  operations: readonly OperationRecord[],
  rows: readonly LedgerRow[],
  charges: readonly BankCharge[],
  disputes: readonly BankDisputeSeen[],
  payouts: readonly BankPayoutSeen[],
): CheckResult[] {
  const byKey = new Map<string, KeyedAttempt[]>();
  const probes: KeyedAttempt[] = [];
  for (const operation of operations) {
    for (const attempt of operation.attempts) {
      if (attempt.probe) {
        probes.push({ operation, attempt });
        continue;
      }
      const key = attemptKey(operation, attempt);
      let list = byKey.get(key);
      if (!list) {
        list = [];
        byKey.set(key, list);
      }
      list.push({ operation, attempt });
    }
  }
  const rowByKey = new Map(rows.map((row) => [`${row.userId}|${row.type}|${row.refId}`, row]));
  const chargeByRef = new Map(charges.map((charge) => [charge.merchantRef, charge]));

  return [
    identicalAnswers(byKey),
    executedOnce(byKey),
    acknowledgedInLedger(byKey, rowByKey),
    answersMatchLedger(byKey, rowByKey),
    noPhantomRows(operations, rows),
    refusalsLeftNothing(byKey, rowByKey),
    mismatchesRefused(probes, rowByKey),
    creditsExplained(
      byKey,
      rows,
      chargeByRef,
      new Map(disputes.map((dispute) => [dispute.id, dispute])),
      new Map(payouts.map((payout) => [payout.merchantRef, payout])),
    ),
    refusedTransfersLeftNothing(operations, rowByKey),
    overRefundsRefused(operations, rowByKey),
    neverMoreBackThanCharged(rows, disputes),
    succeededChargesCreditedOnce(rows, charges),
    noChargeAtTheCeiling(rows, chargeByRef),
  ];
}

function storedAnswers(attempts: readonly KeyedAttempt[]): { status: number; body: string; replayed: boolean }[] {
  const answers: { status: number; body: string; replayed: boolean }[] = [];
  for (const { attempt } of attempts) {
    const outcome = attempt.outcome;
    if (outcome.kind === "response" && isStoredAnswer(outcome)) answers.push(outcome);
  }
  return answers;
}

/**
 * Every stored answer (2xx, 402, 422 balance_limit_exceeded) for one key has the same status and byte-identical
 * body (contract section 3).
 */
function identicalAnswers(byKey: Map<string, KeyedAttempt[]>): CheckResult {
  const findings = new Findings();
  let compared = 0;
  for (const [key, attempts] of byKey) {
    const answers = storedAnswers(attempts);
    if (answers.length < 2) continue;
    compared += 1;
    const first = answers[0]!;
    for (const answer of answers.slice(1)) {
      if (answer.status !== first.status || answer.body !== first.body) {
        findings.add(`${key}: ${first.status} ${first.body} vs ${answer.status} ${answer.body}`);
        break;
      }
    }
  }
  return findings.result(
    "client: every stored answer for a key byte-identical",
    `${compared} keys answered more than once`,
  );
}

/**
 * At most one stored answer per key came without `Idempotent-Replayed: true`: a second "first" answer would mean
 * the operation ran twice (contract sections 1 and 3).
 */
function executedOnce(byKey: Map<string, KeyedAttempt[]>): CheckResult {
  const findings = new Findings();
  let keys = 0;
  for (const [key, attempts] of byKey) {
    const answers = storedAnswers(attempts);
    if (answers.length === 0) continue;
    keys += 1;
    const firsts = answers.filter((answer) => !answer.replayed).length;
    if (firsts > 1) findings.add(`${key}: ${firsts} answers without Idempotent-Replayed`);
  }
  return findings.result("client: one first answer per key, all others replays", `${keys} keys`);
}

/**
 * Every stored answer the clients saw is exactly the row's stored response (status and bytes), and what its body
 * says agrees with the row: same amount; a terminal status in the body is the row's status.
 */
function answersMatchLedger(byKey: Map<string, KeyedAttempt[]>, rowByKey: Map<string, LedgerRow>): CheckResult {
  const findings = new Findings();
  let keys = 0;
  for (const [key, attempts] of byKey) {
    const answers = storedAnswers(attempts);
    if (answers.length === 0) continue;
    keys += 1;
    const row = rowByKey.get(key);
    if (!row) {
      findings.add(`${key}: answered ${answers[0]!.status} but the ledger has no row`);
      continue;
    }
    const answer = answers[0]!;
    if (row.responseStatus !== answer.status || row.responseBody !== answer.body) {
      findings.add(`${key}: answer ${answer.status} differs from the stored response ${row.responseStatus}`);
      continue;
    }
    const view = answerView(answer.body);
    // A stored problem (402 insufficient_funds, 422 balance_limit_exceeded) is the outcome of a row that failed
    // for exactly that reason.
    const problemCode = storedProblemCode(answer);
    if (problemCode !== null) {
      if (row.status !== "failed" || row.failureReason !== problemCode)
        findings.add(`${key}: ${answer.status} ${problemCode} but the row is ${row.status}/${row.failureReason}`);
      continue;
    }
    if (!view || view.amount !== row.amountMinor) {
      findings.add(`${key}: answer amount ${String(view?.amount)} vs row ${row.amountMinor}`);
      continue;
    }
    if ((view.status === "succeeded" || view.status === "failed") && view.status !== row.status) {
      findings.add(`${key}: answer said ${view.status}, the row is ${row.status} (a terminal row moved)`);
    }
  }
  return findings.result("client: answers are the rows' stored responses", `${keys} keys`);
}

/** The name of the check that counts lost acknowledged operations (the cluster storm's summary reads it). */
export const ACKNOWLEDGED_CHECK_NAME = "client: every 2xx seen is in the ledger with its effect (0 lost acknowledged)";

/**
 * With failovers (the cluster storm): every operation a client saw acknowledged (a 2xx) is in the ledger with
 * its effect: a row exists, and when the answer said `succeeded` the row is succeeded (its money moved). A failover
 * must not lose one.
 */
function acknowledgedInLedger(byKey: Map<string, KeyedAttempt[]>, rowByKey: Map<string, LedgerRow>): CheckResult {
  const findings = new Findings();
  let acknowledged = 0;
  for (const [key, attempts] of byKey) {
    let outcome: HttpOutcome | undefined;
    for (const { attempt } of attempts) {
      if (attempt.outcome.kind === "response" && attempt.outcome.status >= 200 && attempt.outcome.status < 300) {
        outcome = attempt.outcome;
        break;
      }
    }
    if (outcome?.kind !== "response") continue;
    acknowledged += 1;
    const row = rowByKey.get(key);
    const view = answerView(outcome.body);
    if (!row) findings.add(`${key}: acknowledged ${outcome.status}, no row in the ledger`);
    else if (view?.status === "succeeded" && row.status !== "succeeded")
      findings.add(`${key}: acknowledged as succeeded, the row is ${row.status}`);
  }
  return findings.result(ACKNOWLEDGED_CHECK_NAME, `${acknowledged} keys acknowledged`);
}

/** Every row of the storm's users belongs to an operation a client sent, with the amount the client sent. */
function noPhantomRows(operations: readonly OperationRecord[], rows: readonly LedgerRow[]): CheckResult {
  const findings = new Findings();
  const sent = new Map<string, OperationRecord>();
  for (const operation of operations) {
    if (operation.attempts.length === 0) continue;
    sent.set(`${operation.userId}|${operation.kind}|${operation.ident}`, operation);
  }
  for (const row of rows) {
    // Chargebacks are the bank's doing, not a client's: creditsExplained holds them to the bank's disputes.
    if (row.type === "chargeback" || row.type === "chargeback_reversal") continue;
    // A payout's return is the bank's doing, a transfer_in the sender's: creditsExplained holds them to their cause.
    if (row.type === "payout_return" || row.type === "transfer_in") continue;
    // A reward's ref_id is `<adId>:<day>`; the client knows the ad only.
    const ident = row.type === "reward" ? row.refId.replace(/:\d{4}-\d{2}-\d{2}$/, "") : row.refId;
    // An adjustment belongs to the top-up a client sent under the same reference.
    const kind = row.type === "adjustment" ? "topup" : row.type;
    const operation = sent.get(`${row.userId}|${kind}|${ident}`);
    if (!operation) {
      findings.add(`${row.userId}|${row.type}|${row.refId}: a row no client asked for`);
      continue;
    }
    if (operation.amountMinor !== null && operation.amountMinor !== row.amountMinor) {
      findings.add(
        `${row.userId}|${row.type}|${row.refId}: row amount ${row.amountMinor}, client sent ${operation.amountMinor}`,
      );
    }
    if (row.type === "refund" && row.topupRefId !== operation.topupRefId) {
      findings.add(
        `${row.userId}|refund|${row.refId}: refunds top-up ${row.topupRefId}, the admin sent ${operation.topupRefId}`,
      );
    }
  }
  return findings.result("client: no row without a request, amounts as sent", `${rows.length} rows`);
}

/**
 * A key whose every attempt was refused before any work (400/401/403/413/415/422/429/503) and never ended in a
 * timeout, a dropped connection, a 409 or another 5xx (after which the work may have run) has no row.
 */
function refusalsLeftNothing(byKey: Map<string, KeyedAttempt[]>, rowByKey: Map<string, LedgerRow>): CheckResult {
  const findings = new Findings();
  let keys = 0;
  for (const [key, attempts] of byKey) {
    const allRefused = attempts.every(
      ({ attempt }) =>
        attempt.outcome.kind === "response" &&
        NON_STORED_REFUSALS.has(attempt.outcome.status) &&
        // A 422 is a refusal only when it is not a stored outcome (balance_limit_exceeded is one).
        !isStoredAnswer(attempt.outcome),
    );
    if (!allRefused) continue;
    keys += 1;
    const row = rowByKey.get(key);
    if (row) findings.add(`${key}: every answer was a refusal, yet the ledger has a ${row.status} row`);
  }
  return findings.result("client: refused requests left no row", `${keys} keys only refused`);
}

/**
 * Every mismatch probe (same key, other amount) was answered 422 naming `amount`, never 409 (the fingerprint is
 * compared before the in-progress check, contract section 3), and the row kept the original amount.
 */
function mismatchesRefused(probes: readonly KeyedAttempt[], rowByKey: Map<string, LedgerRow>): CheckResult {
  const findings = new Findings();
  for (const { operation, attempt } of probes) {
    const key = attemptKey(operation, attempt);
    const outcome = attempt.outcome;
    if (outcome.kind === "response" && outcome.status !== 422 && outcome.status < 500) {
      findings.add(`${key}: a request with another amount was answered ${outcome.status}`);
    } else if (outcome.kind === "response" && outcome.status === 422) {
      const problem = parseJson(outcome.body) as ResponseBody<"/api/v1/topups", "post", 422> | undefined;
      if (problem?.code !== "idempotency_key_reused") {
        findings.add(`${key}: a request with another amount was answered 422 ${problem?.code ?? "(no code)"}`);
      } else if (!problem.fields.includes("amount")) findings.add(`${key}: 422 does not name "amount"`);
    }
    const row = rowByKey.get(key);
    if (row && operation.amountMinor !== null && row.amountMinor !== operation.amountMinor) {
      findings.add(`${key}: row amount ${row.amountMinor} after a mismatch probe (sent ${operation.amountMinor})`);
    }
  }
  return findings.result("client: same key with another amount refused (422)", `${probes.length} probes`);
}

/**
 * No money moved without a 2xx seen or a succeeded row to show for it: every succeeded row (credit or debit) has a
 * 2xx answer seen by a client for its key, or, when every client attempt was lost (crash, timeout), the server's
 * own evidence: for a top-up a succeeded bank charge of the same amount, for a reward, payment or refund the 201
 * the server stored on the row. A chargeback (no client asks for one) needs a dispute the bank lost, of the same
 * amount; a chargeback reversal one the bank lost and then reversed (contract section 12). Keys credited without a
 * 2xx seen are counted in the scope.
 */
function creditsExplained(
  byKey: Map<string, KeyedAttempt[]>,
  rows: readonly LedgerRow[],
  chargeByRef: Map<string, BankCharge>,
  disputeById: Map<string, BankDisputeSeen>,
  payoutByRef: Map<string, BankPayoutSeen>,
): CheckResult {
  const findings = new Findings();
  const transferByEntryId = new Map(rows.filter((row) => row.type === "transfer").map((row) => [row.entryId, row]));
  let withoutSeen2xx = 0;
  let succeeded = 0;
  for (const row of rows) {
    if (row.status !== "succeeded") continue;
    succeeded += 1;
    const key = `${row.userId}|${row.type}|${row.refId}`;
    const seen = (byKey.get(key) ?? []).some(
      ({ attempt }) =>
        attempt.outcome.kind === "response" && attempt.outcome.status >= 200 && attempt.outcome.status < 300,
    );
    if (seen) continue;
    withoutSeen2xx += 1;
    if (row.type === "chargeback" || row.type === "chargeback_reversal") {
      const dispute = disputeById.get(row.refId);
      const upheld =
        dispute?.lostAt != null &&
        (row.type === "chargeback" || dispute.status === "won") &&
        dispute.amount === row.amountMinor;
      if (!upheld || dispute.merchantRef.split(":")[1] !== row.userId) {
        findings.add(
          `${key}: moved ${row.amountMinor} without a dispute the bank ${row.type === "chargeback" ? "lost" : "reversed"} (${dispute ? `${dispute.status}, ${dispute.amount}` : "no such dispute"})`,
        );
      }
    } else if (row.type === "payout_return") {
      // A return credits what the bank returned: the payout of the same key, returned, of the same amount.
      const payout = payoutByRef.get(`payout:${row.userId}:${row.refId}`);
      if (payout?.status !== "returned" || payout.amount !== row.amountMinor) {
        findings.add(
          `${key}: credited ${row.amountMinor} without a payout the bank returned (${payout ? `${payout.status}, ${payout.amount}` : "no such payout"})`,
        );
      }
    } else if (row.type === "transfer_in") {
      // A transfer_in credits what another storm user sent: its transfer, succeeded, of the same amount.
      const sent = transferByEntryId.get(row.refId.replace(/^transfer:/, ""));
      if (sent?.status !== "succeeded" || sent.amountMinor !== row.amountMinor || sent.userId === row.userId) {
        findings.add(
          `${key}: received ${row.amountMinor} without a succeeded transfer of another user sending it (${sent ? `${sent.userId} ${sent.status}, ${sent.amountMinor}` : "no such transfer"})`,
        );
      }
    } else if (row.type === "topup" || row.type === "adjustment") {
      const charge = chargeByRef.get(`topup:${row.userId}:${row.refId}`);
      if (charge?.status !== "succeeded" || charge.amount !== row.amountMinor) {
        findings.add(`${key}: credited without a 2xx seen and without a succeeded bank charge of ${row.amountMinor}`);
      }
    } else if (row.responseStatus === null || row.responseStatus < 200 || row.responseStatus >= 300) {
      findings.add(`${key}: ${row.type} succeeded without a 2xx seen or stored`);
    }
  }
  return findings.result(
    "client: no money moved without a 2xx seen or a succeeded row",
    `${succeeded} succeeded rows, ${withoutSeen2xx} without a 2xx seen`,
  );
}

/** What a transfer that must be refused may be answered, by why it must be (contract section 15). */
const TRANSFER_REFUSALS: Record<NonNullable<OperationRecord["refusedTransfer"]>, ReadonlySet<string>> = {
  recipient_unknown: new Set(["422 recipient_unknown", "429 rate_limited"]),
  transfer_to_self: new Set(["422 transfer_to_self"]),
};

/**
 * Transfers to an address nobody has and to oneself (contract section 15): never answered 2xx, every answer the
 * expected refusal (`422 recipient_unknown` or, once the sender named too many unknown addresses, `429
 * rate_limited`; `422 transfer_to_self`) or one a client retries (a lost connection, 409 in progress, 5xx), and no
 * row for the key: nothing claimed, nothing moved.
 */
function refusedTransfersLeftNothing(
  operations: readonly OperationRecord[],
  rowByKey: Map<string, LedgerRow>,
): CheckResult {
  const findings = new Findings();
  const counts = { recipient_unknown: 0, transfer_to_self: 0 };
  for (const operation of operations) {
    const expected = operation.refusedTransfer;
    if (operation.kind !== "transfer" || !expected) continue;
    counts[expected] += 1;
    const key = `${operation.userId}|transfer|${operation.ident}`;
    for (const { outcome } of operation.attempts) {
      if (outcome.kind !== "response" || outcome.status >= 500 || outcome.status === 409) continue;
      const code = (parseJson(outcome.body) as { code?: unknown } | undefined)?.code;
      if (!TRANSFER_REFUSALS[expected].has(`${outcome.status} ${String(code)}`))
        findings.add(
          `${key}: a transfer to ${operation.to} (${expected}) was answered ${outcome.status} ${String(code)}`,
        );
    }
    const row = rowByKey.get(key);
    if (row) findings.add(`${key}: a transfer to ${operation.to} (${expected}) left a ${row.status} row`);
  }
  return findings.result(
    "client: transfers to unknown addresses and to oneself refused, no row",
    `${counts.recipient_unknown} to unknown addresses, ${counts.transfer_to_self} to oneself`,
  );
}

/** The stored refusals of a refund that asks for more than the top-up or the wallet holds (contract section 11). */
const OVER_REFUND_REFUSALS = new Set([
  "refund_exceeds_topup",
  "insufficient_funds",
  "debt_outstanding",
  "topup_disputed",
]);

/**
 * Refunds as the admins saw them (contract section 11). An over-refund (more than the whole top-up, or 1.00 after a
 * full refund that succeeded) was never answered 2xx and its row, if any, failed with a stored refusal
 * (`422 refund_exceeds_topup`, `402 insufficient_funds` or `402 debt_outstanding`), moving nothing. And per top-up,
 * the refunds answered 2xx and not failed in the ledger add up to at most the top-up's amount.
 */
function overRefundsRefused(operations: readonly OperationRecord[], rowByKey: Map<string, LedgerRow>): CheckResult {
  const findings = new Findings();
  let refunds = 0;
  let attempts = 0;
  let refused = 0;
  const heldByTopup = new Map<string, number>();
  for (const operation of operations) {
    if (operation.kind !== "refund") continue;
    refunds += 1;
    const key = `${operation.userId}|refund|${operation.ident}`;
    const row = rowByKey.get(key);
    const acknowledged = operation.attempts.some(
      ({ outcome, probe }) => !probe && outcome.kind === "response" && outcome.status >= 200 && outcome.status < 300,
    );
    if (acknowledged && row && row.status !== "failed") {
      const topupKey = `${operation.userId}|topup|${operation.topupRefId}`;
      heldByTopup.set(topupKey, (heldByTopup.get(topupKey) ?? 0) + row.amountMinor);
    }
    const over = operation.overRefund;
    if (!over) continue;
    if (over.kind === "after_full") {
      // Only a full refund that holds leaves nothing to refund; one refused or failed at the bank gave it all back.
      const full = rowByKey.get(`${operation.userId}|refund|${over.fullRefundId}`);
      if (full?.status !== "succeeded") continue;
    }
    attempts += 1;
    if (acknowledged) findings.add(`${key}: over-refund (${over.kind}) answered 2xx`);
    if (row && (row.status !== "failed" || !OVER_REFUND_REFUSALS.has(row.failureReason ?? ""))) {
      findings.add(`${key}: over-refund (${over.kind}) left a ${row.status}/${row.failureReason} row`);
    } else if (row) refused += 1;
  }
  for (const [topupKey, heldMinor] of heldByTopup) {
    const topup = rowByKey.get(topupKey);
    if (!topup || heldMinor > topup.amountMinor) {
      findings.add(
        `${topupKey}: refunds answered 2xx hold ${heldMinor}, the top-up is ${topup?.amountMinor ?? "missing"}`,
      );
    }
  }
  return findings.result(
    "client: over-refunds refused, acknowledged refunds within their top-ups",
    `${refunds} refunds, ${attempts} over-refunds (${refused} refused with a stored answer)`,
  );
}

/**
 * Contract 7.7 (case C26): per top-up, what went back to the card never exceeds what was charged, whichever came
 * first of refunds and disputes, counted two ways: the refunds not failed in the ledger (each one the bank's, by the
 * audit's bank_refunds_recorded) plus the bank's disputes lost and not reversed; and the same refunds plus the
 * ledger's chargebacks net of their reversals.
 */
function neverMoreBackThanCharged(rows: readonly LedgerRow[], disputes: readonly BankDisputeSeen[]): CheckResult {
  const findings = new Findings();
  const refundedByTopup = new Map<string, number>();
  const refundRowsByTopup = new Set<string>();
  const chargedBackByTopup = new Map<string, number>();
  const lostAtBankByTopup = new Map<string, number>();
  const topupOfDispute = new Map<string, string>();
  const add = (map: Map<string, number>, key: string, amountMinor: number) =>
    map.set(key, (map.get(key) ?? 0) + amountMinor);
  for (const dispute of disputes) {
    const [, userId, refId] = dispute.merchantRef.split(":");
    const key = `${userId}|${refId}`;
    topupOfDispute.set(dispute.id, key);
    if (dispute.status === "lost") add(lostAtBankByTopup, key, dispute.amount);
  }
  for (const row of rows) {
    if (row.type === "refund" && row.topupRefId !== null) {
      refundRowsByTopup.add(`${row.userId}|${row.topupRefId}`);
      if (row.status !== "failed") add(refundedByTopup, `${row.userId}|${row.topupRefId}`, row.amountMinor);
    }
    const disputed = topupOfDispute.get(row.refId);
    if (row.status === "succeeded" && disputed !== undefined) {
      if (row.type === "chargeback") add(chargedBackByTopup, disputed, row.amountMinor);
      if (row.type === "chargeback_reversal") add(chargedBackByTopup, disputed, -row.amountMinor);
    }
  }
  const disputedTopups = new Set(topupOfDispute.values());
  let judged = 0;
  let refundedAndDisputed = 0;
  for (const row of rows) {
    if (row.type !== "topup" || row.status !== "succeeded") continue;
    const key = `${row.userId}|${row.refId}`;
    const refunded = refundedByTopup.get(key) ?? 0;
    const lostAtBank = lostAtBankByTopup.get(key) ?? 0;
    const chargedBack = chargedBackByTopup.get(key) ?? 0;
    if (refundRowsByTopup.has(key) && disputedTopups.has(key)) refundedAndDisputed += 1;
    if (refunded === 0 && lostAtBank === 0 && chargedBack === 0) continue;
    judged += 1;
    if (refunded + lostAtBank > row.amountMinor)
      findings.add(`${key}: ${refunded} refunded + ${lostAtBank} lost in disputes at the bank > ${row.amountMinor}`);
    if (refunded + chargedBack > row.amountMinor)
      findings.add(`${key}: ${refunded} refunded + ${chargedBack} charged back in the ledger > ${row.amountMinor}`);
  }
  return findings.result(
    "client: never more back to the card than charged (7.7)",
    `${judged} top-ups with money back, ${refundedAndDisputed} both refunded and disputed`,
  );
}

/** The name of the invariant 6 check (contract section 7). */
export const CHARGES_CREDITED_CHECK_NAME = "bank: every succeeded charge credited exactly once (invariant 6)";

/**
 * Contract section 7, invariant 6, as the storm can state it once the reconciler is quiet: every charge of the
 * storm's users that succeeded at the bank is credited exactly once, either by its top-up (succeeded, same amount)
 * or by one `adjustment` entry, never both and never neither. No lease and no age excuses a
 * charge here: after the final reconciler passes nothing is in flight, so an uncredited charge is money taken and
 * never given (case C14's failure, case C15's stuck row). Read from the bank's list and the ledger, not the audit.
 */
function succeededChargesCreditedOnce(rows: readonly LedgerRow[], charges: readonly BankCharge[]): CheckResult {
  const findings = new Findings();
  const storm = new Set(rows.map((row) => row.userId));
  const rowByKey = new Map(rows.map((row) => [`${row.userId}|${row.type}|${row.refId}`, row]));
  let succeeded = 0;
  let byAdjustment = 0;
  for (const charge of charges) {
    if (charge.status !== "succeeded") continue;
    const match = /^topup:([^:]+):(.+)$/.exec(charge.merchantRef);
    if (!match || !storm.has(match[1]!)) continue;
    succeeded += 1;
    const [, userId, refId] = match as unknown as [string, string, string];
    const topup = rowByKey.get(`${userId}|topup|${refId}`);
    // The storm reads an adjustment under its top-up's ref id (readLedgerRows follows the link).
    const adjustment = rowByKey.get(`${userId}|adjustment|${refId}`);
    const credits = (topup?.status === "succeeded" ? 1 : 0) + (adjustment?.status === "succeeded" ? 1 : 0);
    if (adjustment?.status === "succeeded") byAdjustment += 1;
    const credited = topup?.status === "succeeded" ? topup : adjustment?.status === "succeeded" ? adjustment : null;
    if (credits === 0) {
      findings.add(
        `${charge.merchantRef}: charge ${charge.id} of ${charge.amount} succeeded, never credited (top-up ${topup?.status ?? "missing"}${topup?.failureReason ? `/${topup.failureReason}` : ""})`,
      );
    } else if (credits > 1) {
      findings.add(`${charge.merchantRef}: charge ${charge.id} credited twice (its top-up and an adjustment)`);
    } else if (credited && credited.amountMinor !== charge.amount) {
      findings.add(`${charge.merchantRef}: charge ${charge.id} of ${charge.amount} credited ${credited.amountMinor}`);
    }
  }
  return findings.result(
    CHARGES_CREDITED_CHECK_NAME,
    `${succeeded} succeeded charges, ${byAdjustment} credited by an adjustment`,
  );
}

/**
 * Case C15 (contract section 5, "no charge without room for its credit"): a top-up refused for the ceiling
 * (`422 balance_limit_exceeded`, its row failed for that reason) never reached the bank: no charge exists for its
 * merchant reference. The scope counts the refusals, top-ups and rewards, so a storm that never met the ceiling shows.
 */
function noChargeAtTheCeiling(rows: readonly LedgerRow[], chargeByRef: Map<string, BankCharge>): CheckResult {
  const findings = new Findings();
  let topups = 0;
  let rewards = 0;
  for (const row of rows) {
    if (row.failureReason !== "balance_limit_exceeded") continue;
    if (row.type === "reward") rewards += 1;
    if (row.type !== "topup") continue;
    topups += 1;
    const charge = chargeByRef.get(`topup:${row.userId}:${row.refId}`);
    if (charge)
      findings.add(
        `topup:${row.userId}:${row.refId}: refused at the ceiling, yet charge ${charge.id} is ${charge.status}`,
      );
  }
  return findings.result(
    "bank: no charge for a top-up refused at the ceiling (C15)",
    `${topups} top-ups and ${rewards} rewards refused balance_limit_exceeded`,
  );
}
