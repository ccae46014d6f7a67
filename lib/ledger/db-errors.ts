/**
 * The one classifier of database errors (contract section 8; case C01 in shared/cases/README.md).
 *
 * The same PostgreSQL error reaches the ledger in several shapes (docs/development.md note 2, verified against
 * PostgreSQL 15 with Prisma 7.10 + @prisma/adapter-pg 7.10 and pg 8.23):
 *  - plain `pg`: a `DatabaseError` with `.code` (SQLSTATE) and `.constraint` (the index or constraint name),
 *    possibly wrapped by other layers in `Error.cause`;
 *  - Prisma: a `PrismaClientKnownRequestError` (P2010 for $queryRaw/$executeRaw, P2002/P2003/P2034/P2039 for
 *    model calls) with no top-level `.cause`; the database error is at `meta.driverAdapterError` (a
 *    `DriverAdapterError`) whose `.cause` is a plain object `{ originalCode, kind, constraint?: { index } |
 *    { fields }, originalMessage }`.
 *
 * The classifier walks that whole graph (breadth first, so the outermost evidence comes first) with a depth cap,
 * a node budget and a cycle guard, collects every SQLSTATE it finds together with the constraint named next to
 * it, and decides from structured fields only. It never reads a database error's message text to decide a
 * verdict: one use of a message is to fill the diagnostic `constraint` of a CHECK violation, which Prisma reports
 * nowhere else; the other is node-postgres's own fixed connection messages, on errors that carry no SQLSTATE at
 * all (see DRIVER_CONNECTION_MESSAGES), and only when no SQLSTATE was found anywhere in the chain.
 */
import { CLAIM_INDEX } from "./constants";

/** The two SQLSTATEs that mean "run the whole transaction again": serialization_failure and deadlock_detected. */
export type RetryableSqlstate = "40001" | "40P01";

/**
 * What a database error means to the ledger.
 *  - `already_claimed`: 23505 on the claim index ({@link CLAIM_INDEX}); the caller lost the claim race and
 *    must read the existing row in a separate statement (contract section 1).
 *  - `unique_violation`: 23505 on any other index, or on an index the error does not name. A bug: 500.
 *  - `check_violation`: 23514. A guard failed (e.g. the balance CHECK, contract section 8): 500.
 *  - `foreign_key_violation`: 23503. 500.
 *  - `retryable`: 40001 or 40P01; `withTransactionRetry` (./retry.ts) runs the transaction again.
 *  - `connection_lost`: the session, not the statement, failed: a connection exception (class 08), the server
 *    shutting down or not yet accepting connections (57P01, 57P02, 57P03), a read-only transaction (25006: the
 *    node is a replica now, a failover is under way), or a driver error with no SQLSTATE that node-postgres
 *    raises when the socket dies or cannot be opened. The transaction may or may not have committed if the
 *    COMMIT was in flight; `withTransactionRetry` runs it again as a whole within a time bound, and the ledger's
 *    keys settle the uncertain case (docs/decisions/015-failover-and-poolers.md).
 *  - `unknown`: no SQLSTATE found, another SQLSTATE, or contradictory evidence. 500, never a replay.
 * `constraint` is the index or constraint name when the error carries one, else null; it is diagnostic only.
 */
export type DbErrorVerdict =
  | { kind: "already_claimed" }
  | { kind: "unique_violation"; constraint: string | null }
  | { kind: "check_violation"; constraint: string | null }
  | { kind: "foreign_key_violation"; constraint: string | null }
  | { kind: "retryable"; sqlstate: RetryableSqlstate }
  | { kind: "connection_lost"; cause: string }
  | { kind: "unknown" };

/**
 * How deep the walk goes. The error itself is depth 0; each hop (`cause`, `meta.driverAdapterError`, one element
 * of `errors`) adds one. The deepest shapes the stack produces are depth 2 (Prisma error → driverAdapterError →
 * its cause object) and a pg error under our own wrappers (case C01(d) puts it at depth 3). 8 leaves room for
 * about five more layers of wrapping by code we do not control (framework, auth library), while a pathological
 * chain costs at most a few dozen property reads. Deeper evidence is ignored, so it can only make the verdict
 * `unknown` (a 500), never "already claimed".
 */
export const DB_ERRORS_MAX_DEPTH = 8;

/**
 * The most objects one classification inspects. An `AggregateError` can fan out (e.g. `Promise.any` over a few
 * parallel statements); real ones hold a handful of errors. 64 is an order of magnitude above that and keeps the
 * worst case at well under a millisecond inside a catch block. Objects past the budget are not inspected.
 */
export const DB_ERRORS_MAX_NODES = 64;

/**
 * The largest `maxDepth` a caller may ask for. 64 is far beyond any real chain; the cap exists so that a typo
 * cannot turn the depth limit off.
 */
const MAX_DEPTH_CEILING = 64;

/** Options of {@link classifyDbError}. */
export interface ClassifyDbErrorOptions {
  /**
   * Deepest level inspected (0 = the error itself only). Default {@link DB_ERRORS_MAX_DEPTH}. Overridable so that
   * a test can show that the depth matters (negative control for case C01(d)); production code uses the default.
   */
  maxDepth?: number;
}

/**
 * A SQLSTATE is five characters whose first two are one of PostgreSQL's error classes (PostgreSQL docs,
 * Appendix A "PostgreSQL Error Codes"): classes start with a digit, or are F0, HV, P0 or XX. This keeps Prisma's
 * own codes (P1000..P6999) and Node's errno codes (EPIPE, EPERM) from being mistaken for SQLSTATEs.
 */
const SQLSTATE_PATTERN = /^(?:[0-9][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/;

/** PostgreSQL's check_violation message, the only place Prisma keeps the constraint's name (docs/development.md note 2). */
const CHECK_CONSTRAINT_IN_MESSAGE = /violates check constraint "((?:[^"]|"")+)"/;

const SQLSTATE_UNIQUE_VIOLATION = "23505";
const SQLSTATE_CHECK_VIOLATION = "23514";
const SQLSTATE_FOREIGN_KEY_VIOLATION = "23503";
const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set<RetryableSqlstate>(["40001", "40P01"]);

/**
 * SQLSTATEs that mean the session is gone or is on the wrong node (PostgreSQL docs, Appendix A): admin_shutdown
 * (57P01, the node is being stopped or demoted), crash_shutdown (57P02), cannot_connect_now (57P03, starting up
 * or in recovery) and read_only_sql_transaction (25006: the node HAProxy still routes to was demoted to a replica;
 * docs/development.md note 26 measured it during failovers). Class 08 (connection_exception) is matched by its prefix.
 */
const CONNECTION_LOST_SQLSTATES: ReadonlySet<string> = new Set(["57P01", "57P02", "57P03", "25006"]);
const CONNECTION_EXCEPTION_CLASS = "08";

/**
 * Socket error codes (Node's errno names, on `code`) that mean the connection to the server failed or broke.
 * Unlike SQLSTATEs they come from the operating system, never from PostgreSQL.
 */
const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNABORTED",
]);

/**
 * node-postgres (pg 8.23, pg-pool 3) raises these errors with no `code` at all when the socket closes under a
 * query, when a connect times out, or when a query is sent on a client whose connection already failed
 * (node_modules/pg/lib/client.js and pg-pool/index.js). They are the driver's own fixed strings, not database
 * messages, so matching them exactly is the only structured signal there is; a database error (which always has
 * a SQLSTATE) is never decided this way.
 */
const DRIVER_CONNECTION_MESSAGES: ReadonlySet<string> = new Set([
  "Connection terminated unexpectedly",
  "Connection terminated",
  "Connection terminated due to connection timeout",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
]);

/** One SQLSTATE found in the chain, with the names found on the same object. */
interface Finding {
  readonly sqlstate: string;
  /** From a structured field: pg's `constraint` string, or Prisma's `constraint.index`. */
  readonly constraint: string | null;
  /** From Prisma's `originalMessage` of a 23514 only; diagnostic, never used to decide. */
  readonly constraintFromMessage: string | null;
}

/**
 * Classifies any thrown value as a {@link DbErrorVerdict}.
 *
 * `error`: anything a `catch` received (a pg `DatabaseError`, a Prisma error, an `Error` wrapping either through
 * `cause`, an `AggregateError`, or a non-error value).
 *
 * Rules (contract section 8, case C01):
 *  - only SQLSTATEs decide: pg's `code`, Prisma's `originalCode` (and `code` on anything not named
 *    `PrismaClient*`, whose `code` is Prisma's own P-code); message text never decides (C01(f));
 *  - `already_claimed` only when every SQLSTATE found is 23505 and every one of them names exactly
 *    {@link CLAIM_INDEX} as a structured index name; `constraint: { fields }` alone is not enough (C01(c), fail
 *    closed); another index is `unique_violation` (C01(b));
 *  - contradictory SQLSTATEs in one chain give `unknown`, except a mix of 40001 and 40P01 (`retryable`);
 *  - the walk follows `cause`, `meta.driverAdapterError` (and so its `cause`) and the elements of `errors`,
 *    breadth first, visits each object once (cycles terminate, C01(e)), inspects nothing deeper than `maxDepth`,
 *    and stops after {@link DB_ERRORS_MAX_NODES} objects.
 *
 * Never throws because of `error` (a throwing getter or a revoked proxy gives `unknown`). Throws `RangeError`
 * only when `options.maxDepth` is not an integer in 0..64, which is a programming error.
 */
export function classifyDbError(error: unknown, options: ClassifyDbErrorOptions = {}): DbErrorVerdict {
  const maxDepth = options.maxDepth ?? DB_ERRORS_MAX_DEPTH;
  if (!Number.isInteger(maxDepth) || maxDepth < 0 || maxDepth > MAX_DEPTH_CEILING) {
    throw new RangeError(`maxDepth must be an integer in 0..${MAX_DEPTH_CEILING}, got ${String(maxDepth)}`);
  }
  let findings: Finding[];
  let driverFailure: string | null;
  try {
    ({ findings, driverFailure } = collectFindings(error, maxDepth));
  } catch {
    // A hostile or broken error object (throwing getter, revoked proxy): nothing trustworthy can be said.
    return { kind: "unknown" };
  }
  return decide(findings, driverFailure);
}

function isConnectionLostSqlstate(sqlstate: string): boolean {
  return CONNECTION_LOST_SQLSTATES.has(sqlstate) || sqlstate.startsWith(CONNECTION_EXCEPTION_CLASS);
}

function decide(findings: readonly Finding[], driverFailure: string | null): DbErrorVerdict {
  const first = findings[0];
  if (first === undefined) {
    return driverFailure === null ? { kind: "unknown" } : { kind: "connection_lost", cause: driverFailure };
  }
  // A lost session can surface with a second, consequential SQLSTATE further down (e.g. 57P01 wrapped around the
  // 08006 of the dying socket): every SQLSTATE found must say "connection", or the verdict stays below.
  if (findings.every((f) => isConnectionLostSqlstate(f.sqlstate))) {
    return { kind: "connection_lost", cause: first.sqlstate };
  }

  const sqlstates = new Set(findings.map((f) => f.sqlstate));
  if (sqlstates.size > 1) {
    // Two different database errors in one chain. Both retryable: retrying is right either way. Anything else is
    // ambiguous, and an ambiguous error must never become a replay or a success.
    const allRetryable = [...sqlstates].every((s) => RETRYABLE_SQLSTATES.has(s));
    return allRetryable ? { kind: "retryable", sqlstate: first.sqlstate as RetryableSqlstate } : { kind: "unknown" };
  }

  const constraint = findings.find((f) => f.constraint !== null)?.constraint ?? null;
  switch (first.sqlstate) {
    case SQLSTATE_UNIQUE_VIOLATION: {
      // The one decision that turns an error into a replay: every piece of evidence must name the claim index.
      const claimed = findings.every((f) => f.constraint === CLAIM_INDEX);
      return claimed ? { kind: "already_claimed" } : { kind: "unique_violation", constraint };
    }
    case SQLSTATE_CHECK_VIOLATION: {
      const fromMessage = findings.find((f) => f.constraintFromMessage !== null)?.constraintFromMessage ?? null;
      return { kind: "check_violation", constraint: constraint ?? fromMessage };
    }
    case SQLSTATE_FOREIGN_KEY_VIOLATION:
      return { kind: "foreign_key_violation", constraint };
    default:
      return RETRYABLE_SQLSTATES.has(first.sqlstate)
        ? { kind: "retryable", sqlstate: first.sqlstate as RetryableSqlstate }
        : { kind: "unknown" };
  }
}

function collectFindings(root: unknown, maxDepth: number): { findings: Finding[]; driverFailure: string | null } {
  const findings: Finding[] = [];
  let driverFailure: string | null = null;
  const visited = new Set<object>();
  const queue: Array<{ node: unknown; depth: number }> = [{ node: root, depth: 0 }];

  for (let head = 0; head < queue.length && visited.size < DB_ERRORS_MAX_NODES; head += 1) {
    const { node, depth } = queue[head]!;
    if (typeof node !== "object" || node === null || visited.has(node)) continue;
    visited.add(node);

    const finding = findingOf(node);
    if (finding !== null) findings.push(finding);
    else driverFailure ??= driverConnectionFailureOf(node);

    if (depth >= maxDepth) continue;
    for (const next of neighbours(node)) queue.push({ node: next, depth: depth + 1 });
  }
  return { findings, driverFailure };
}

/** A socket errno (`code`) or one of node-postgres's own connection messages on `node`, else null. */
function driverConnectionFailureOf(node: object): string | null {
  const code = read(node, "code");
  if (typeof code === "string" && SOCKET_ERROR_CODES.has(code)) return code;
  const message = read(node, "message");
  if (typeof message === "string" && DRIVER_CONNECTION_MESSAGES.has(message)) return message;
  return null;
}

/** The objects one hop further down the chain. */
function neighbours(node: object): unknown[] {
  const next: unknown[] = [read(node, "cause")];
  // Prisma 7 with a driver adapter: the database error hangs off meta, not off cause (docs/development.md note 2).
  // Followed on any object, not only on `instanceof PrismaClientKnownRequestError`: a bundler can load the
  // runtime twice, and following an edge decides nothing by itself.
  const meta = read(node, "meta");
  if (typeof meta === "object" && meta !== null) next.push(read(meta, "driverAdapterError"));
  const errors = read(node, "errors");
  if (Array.isArray(errors)) next.push(...errors.slice(0, DB_ERRORS_MAX_NODES));
  return next;
}

function findingOf(node: object): Finding | null {
  const sqlstate = sqlstateOf(node);
  if (sqlstate === null) return null;
  const constraint = structuredConstraintOf(node);
  let constraintFromMessage: string | null = null;
  if (sqlstate === SQLSTATE_CHECK_VIOLATION && constraint === null) {
    const message = read(node, "originalMessage");
    if (typeof message === "string") {
      const match = CHECK_CONSTRAINT_IN_MESSAGE.exec(message);
      constraintFromMessage = match?.[1]?.replaceAll('""', '"') ?? null;
    }
  }
  return { sqlstate, constraint, constraintFromMessage };
}

function sqlstateOf(node: object): string | null {
  // Prisma's adapter object: `originalCode` is the SQLSTATE as PostgreSQL sent it.
  const originalCode = read(node, "originalCode");
  if (isSqlstate(originalCode)) return originalCode;
  // On a Prisma error, `code` is Prisma's own (P2002, P2010...), never a SQLSTATE. Matched by name, because
  // `instanceof` fails when a bundler loads the Prisma runtime twice (docs/development.md note 2).
  if (isPrismaClientErrorName(read(node, "name"))) return null;
  // pg's DatabaseError (and the adapter's `kind: "postgres"` object) carry the SQLSTATE in `code`.
  const code = read(node, "code");
  return isSqlstate(code) ? code : null;
}

function structuredConstraintOf(node: object): string | null {
  const constraint = read(node, "constraint");
  // pg's DatabaseError: the constraint or index name as PostgreSQL reported it.
  if (typeof constraint === "string") return constraint.length > 0 ? constraint : null;
  // Prisma's adapter: `{ index: name }` names it; `{ fields: [...] }` does not, and stays null (C01(c)).
  if (typeof constraint === "object" && constraint !== null) {
    const index = read(constraint, "index");
    if (typeof index === "string" && index.length > 0) return index;
  }
  return null;
}

function isSqlstate(value: unknown): value is string {
  return typeof value === "string" && SQLSTATE_PATTERN.test(value);
}

function isPrismaClientErrorName(name: unknown): boolean {
  return typeof name === "string" && name.startsWith("PrismaClient");
}

/**
 * A property read. It may run a getter, which may throw: {@link classifyDbError} catches that and answers
 * `unknown`, so a broken error object can never be taken for a claim.
 */
function read(target: object, key: string): unknown {
  return (target as Record<string, unknown>)[key];
}
