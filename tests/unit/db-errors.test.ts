/**
 * Unit tests of the database error classifier and the transaction retry (contract section 8, case C01).
 *
 * The errors here are built by hand, shaped exactly like the ones the stack really throws (docs/development.md note 2,
 * re-verified by tests/integration/db-errors.test.ts against PostgreSQL):
 *  - Prisma: a real `PrismaClientKnownRequestError` from the generated client's runtime, with no top-level
 *    `cause`, and `meta.driverAdapterError` = an Error named "DriverAdapterError" whose `cause` is the adapter's
 *    plain object (`{ originalCode, originalMessage, kind, constraint?, table? }`);
 *  - pg: a real `DatabaseError` from `pg` with `code` and `constraint` set, as pg-protocol fills them.
 */
import { describe, expect, it, vi } from "vitest";
import { DatabaseError } from "pg";
import { log } from "../../lib/log";
import { PrismaClientKnownRequestError } from "@prisma/client/runtime/client";
import { CLAIM_INDEX } from "../../lib/ledger/constants";
import { DB_ERRORS_MAX_DEPTH, DB_ERRORS_MAX_NODES, classifyDbError } from "../../lib/ledger/db-errors";
import {
  FAILOVER_RETRY_MAX_DELAY_MS,
  failoverRetryDelayMs,
  TRANSACTION_RETRY_MAX_DELAY_MS,
  transactionRetryDelayMs,
  type TransactionRetryInfo,
  withTransactionRetry,
} from "../../lib/ledger/retry";

/**
 * `UNIQUE (user_id, bank_charge_id)` on ledger_entries (migration 20261129000000_init): a bank charge belongs to one
 * row. A 23505 on it is a bug, never a lost claim (contract section 8).
 */
const BANK_CHARGE_INDEX = "ledger_entries_user_id_bank_charge_id_key";

/** The adapter's payload, as @prisma/adapter-pg 7.10 builds it in `convertDriverError`. */
type AdapterCause = Record<string, unknown> & { kind: string; originalCode: string; originalMessage: string };

/** Same shape as @prisma/driver-adapter-utils' DriverAdapterError (keys: name, cause; message = kind). */
class FakeDriverAdapterError extends Error {
  override name = "DriverAdapterError";
  constructor(payload: AdapterCause) {
    super(typeof payload.message === "string" ? payload.message : payload.kind);
    this.cause = payload;
  }
}

/** A Prisma 7 error as thrown with @prisma/adapter-pg: P2010 for raw queries, P2002/P2003/P2034/P2039 for models. */
function prismaError(code: string, cause: AdapterCause, extraMeta: Record<string, unknown> = {}) {
  return new PrismaClientKnownRequestError(`Invalid invocation. Code: \`${cause.originalCode}\`.`, {
    code,
    clientVersion: "7.10.1",
    meta: { ...extraMeta, driverAdapterError: new FakeDriverAdapterError(cause) },
  });
}

function uniqueCause(constraint: unknown): AdapterCause {
  return {
    originalCode: "23505",
    originalMessage: `duplicate key value violates unique constraint "${CLAIM_INDEX}"`,
    kind: "UniqueConstraintViolation",
    constraint,
    table: "ledger_entries",
  };
}

/** A pg DatabaseError with the fields pg-protocol sets from the server's ErrorResponse. */
function pgError(code: string, constraint?: string, message = "database error") {
  const error = new DatabaseError(message, message.length, "error");
  error.severity = "ERROR";
  error.code = code;
  error.constraint = constraint;
  error.table = "ledger_entries";
  return error;
}

/** `error` wrapped `levels` times in `new Error(..., { cause })`. */
function wrap(error: unknown, levels: number): unknown {
  let outer = error;
  for (let i = 0; i < levels; i += 1) outer = new Error(`wrapper ${levels - i}`, { cause: outer });
  return outer;
}

function retryableCause(sqlstate: "40001" | "40P01"): AdapterCause {
  return { originalCode: sqlstate, originalMessage: "could not serialize access", kind: "TransactionWriteConflict" };
}

describe("classifyDbError: case C01", () => {
  it("C01(a) Prisma error whose driverAdapterError.cause is a 23505 on the claim index is already_claimed", () => {
    const error = prismaError("P2010", uniqueCause({ index: CLAIM_INDEX }));
    expect(error).toBeInstanceOf(PrismaClientKnownRequestError);
    expect(error.name).toBe("PrismaClientKnownRequestError");
    expect("cause" in error).toBe(false);
    expect(classifyDbError(error)).toEqual({ kind: "already_claimed" });
    // The model-call form (P2002, meta.modelName) gives the same verdict.
    const model = prismaError("P2002", uniqueCause({ index: CLAIM_INDEX }), { modelName: "LedgerEntry" });
    expect(classifyDbError(model)).toEqual({ kind: "already_claimed" });
  });

  it("C01(b) the same error on another index is a unique_violation, not already_claimed", () => {
    const error = prismaError("P2002", uniqueCause({ index: BANK_CHARGE_INDEX }));
    expect(classifyDbError(error)).toEqual({ kind: "unique_violation", constraint: BANK_CHARGE_INDEX });
    // A name that merely contains the claim index, or differs only in case, is another index.
    for (const index of [`${CLAIM_INDEX}_old`, CLAIM_INDEX.toUpperCase(), ` ${CLAIM_INDEX}`]) {
      expect(classifyDbError(prismaError("P2002", uniqueCause({ index })))).toEqual({
        kind: "unique_violation",
        constraint: index,
      });
    }
  });

  it("C01(c) a 23505 with constraint {fields} only is not already_claimed (fail closed)", () => {
    const error = prismaError("P2002", uniqueCause({ fields: ["user_id", "type", "ref_id"] }));
    expect(classifyDbError(error)).toEqual({ kind: "unique_violation", constraint: null });
    // No constraint at all: the same.
    expect(classifyDbError(prismaError("P2002", uniqueCause(undefined)))).toEqual({
      kind: "unique_violation",
      constraint: null,
    });
  });

  it("C01(d) a pg DatabaseError 23505 on the claim index wrapped three levels deep in Error.cause is already_claimed", () => {
    const error = wrap(pgError("23505", CLAIM_INDEX), 3);
    expect(classifyDbError(error)).toEqual({ kind: "already_claimed" });
    // And unwrapped, and in one wrapper.
    expect(classifyDbError(pgError("23505", CLAIM_INDEX))).toEqual({ kind: "already_claimed" });
    expect(classifyDbError(wrap(pgError("23505", CLAIM_INDEX), 1))).toEqual({ kind: "already_claimed" });
  });

  it("C01(d) negative control: with maxDepth 1 the same error is NOT recognised (the depth matters)", () => {
    const error = wrap(pgError("23505", CLAIM_INDEX), 3);
    expect(classifyDbError(error, { maxDepth: 1 })).toEqual({ kind: "unknown" });
    expect(classifyDbError(error, { maxDepth: 2 })).toEqual({ kind: "unknown" });
    // The pg error sits at depth 3: that is the smallest depth that sees it.
    expect(classifyDbError(error, { maxDepth: 3 })).toEqual({ kind: "already_claimed" });
    // A Prisma error needs depth 2 (error -> driverAdapterError -> its cause).
    const prisma = prismaError("P2010", uniqueCause({ index: CLAIM_INDEX }));
    expect(classifyDbError(prisma, { maxDepth: 1 })).toEqual({ kind: "unknown" });
    expect(classifyDbError(prisma, { maxDepth: 2 })).toEqual({ kind: "already_claimed" });
  });

  it("C01(e) a cause chain that points back to itself terminates as unknown", () => {
    const self = new Error("loops");
    self.cause = self;
    expect(classifyDbError(self)).toEqual({ kind: "unknown" });

    // The cycle guard, not only the depth cap, ends the walk: the looping object is inspected once.
    let causeReads = 0;
    const counted = new Error("counted");
    Object.defineProperty(counted, "cause", {
      get() {
        causeReads += 1;
        return counted;
      },
    });
    expect(classifyDbError(counted, { maxDepth: 64 })).toEqual({ kind: "unknown" });
    expect(causeReads).toBe(1);

    const a = new Error("a");
    const b = new Error("b", { cause: a });
    a.cause = b;
    expect(classifyDbError(a)).toEqual({ kind: "unknown" });

    // A Prisma error whose driverAdapterError's cause loops back to the Prisma error.
    const prisma = new PrismaClientKnownRequestError("loop", { code: "P2010", clientVersion: "7.10.1", meta: {} });
    const adapter = new Error("adapter", { cause: prisma });
    adapter.name = "DriverAdapterError";
    prisma.meta = { driverAdapterError: adapter };
    expect(classifyDbError(prisma)).toEqual({ kind: "unknown" });

    // Cycles do not hide real evidence: the loop is walked once and the claim still found.
    const wrapper = new Error("wrapper");
    const claimed = pgError("23505", CLAIM_INDEX);
    wrapper.cause = claimed;
    claimed.cause = wrapper;
    expect(classifyDbError(wrapper)).toEqual({ kind: "already_claimed" });
  });

  it('C01(f) an error whose message contains "23505" but carries no code is unknown', () => {
    expect(classifyDbError(new Error("duplicate key: SQLSTATE 23505"))).toEqual({ kind: "unknown" });
    expect(classifyDbError(new Error(`23505 duplicate key value violates unique constraint "${CLAIM_INDEX}"`))).toEqual(
      { kind: "unknown" },
    );
    // A Prisma error whose message says 23505 but whose meta has no adapter error.
    const prisma = new PrismaClientKnownRequestError(
      `Raw query failed. Code: \`23505\`. Message: \`duplicate key value violates unique constraint "${CLAIM_INDEX}"\``,
      { code: "P2010", clientVersion: "7.10.1", meta: {} },
    );
    expect(classifyDbError(prisma)).toEqual({ kind: "unknown" });
    // An adapter object that names the claim index but has no SQLSTATE: the index alone decides nothing.
    const noCode = { kind: "UniqueConstraintViolation", constraint: { index: CLAIM_INDEX }, originalMessage: "23505" };
    expect(classifyDbError(new Error("x", { cause: noCode }))).toEqual({ kind: "unknown" });
    // Prisma's own code P2002 without the adapter error is not a SQLSTATE either.
    const p2002 = new PrismaClientKnownRequestError("Unique constraint failed", {
      code: "P2002",
      clientVersion: "7.10.1",
    });
    expect(classifyDbError(p2002)).toEqual({ kind: "unknown" });
  });
});

describe("classifyDbError: walking the chain", () => {
  it("recognises evidence down to DB_ERRORS_MAX_DEPTH and not one level below (depth cap)", () => {
    expect(DB_ERRORS_MAX_DEPTH).toBe(8);
    expect(classifyDbError(wrap(pgError("23505", CLAIM_INDEX), DB_ERRORS_MAX_DEPTH))).toEqual({
      kind: "already_claimed",
    });
    expect(classifyDbError(wrap(pgError("23505", CLAIM_INDEX), DB_ERRORS_MAX_DEPTH + 1))).toEqual({
      kind: "unknown",
    });
    expect(classifyDbError(pgError("23505", CLAIM_INDEX), { maxDepth: 0 })).toEqual({ kind: "already_claimed" });
  });

  it("rejects a maxDepth that would switch the cap off", () => {
    for (const maxDepth of [-1, 1.5, 65, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => classifyDbError(new Error("x"), { maxDepth })).toThrow(
        new RangeError(`maxDepth must be an integer in 0..64, got ${maxDepth}`),
      );
    }
    // Both ends of the range are allowed: 0 inspects the error itself only, 64 is the ceiling.
    expect(classifyDbError(pgError("23505", CLAIM_INDEX), { maxDepth: 0 })).toEqual({ kind: "already_claimed" });
    expect(classifyDbError(wrap(pgError("23505", CLAIM_INDEX), 1), { maxDepth: 0 })).toEqual({ kind: "unknown" });
    expect(classifyDbError(wrap(pgError("23505", CLAIM_INDEX), 20), { maxDepth: 64 })).toEqual({
      kind: "already_claimed",
    });
  });

  it("terminates on a very long chain and on a wide AggregateError (node budget)", () => {
    expect(classifyDbError(wrap(new Error("root"), 10_000))).toEqual({ kind: "unknown" });
    const noise = (n: number) => Array.from({ length: n }, (_, i) => new Error(`noise ${i}`));
    const claim = () => pgError("23505", CLAIM_INDEX);
    // One flat list longer than the budget: the claim error comes after DB_ERRORS_MAX_NODES others.
    const flat = new AggregateError([...noise(DB_ERRORS_MAX_NODES), claim()]);
    expect(classifyDbError(flat)).toEqual({ kind: "unknown" });
    // Breadth first, the claim error at depth 2 comes after 4 + 2 × 40 other objects: past the budget of 64, it is
    // never inspected, and the verdict is unknown (a 500), never a guess. Under the budget it is found.
    const half = DB_ERRORS_MAX_NODES / 2 + 8;
    const wide = new AggregateError([
      new AggregateError(noise(half)),
      new AggregateError(noise(half)),
      new Error("w", { cause: claim() }),
    ]);
    expect(classifyDbError(wide)).toEqual({ kind: "unknown" });
    const narrow = new AggregateError([new AggregateError(noise(8)), new Error("w", { cause: claim() })]);
    expect(classifyDbError(narrow)).toEqual({
      kind: "already_claimed",
    });
  });

  it("the node budget is exact: the 64th object inspected is read, the 65th is not", () => {
    const noise = (n: number) => Array.from({ length: n }, (_, i) => new Error(`noise ${i}`));
    // The AggregateError itself is the first object, so the claim error after 62 others is the 64th.
    const at64 = new AggregateError([...noise(DB_ERRORS_MAX_NODES - 2), pgError("23505", CLAIM_INDEX)]);
    expect(classifyDbError(at64)).toEqual({ kind: "already_claimed" });
    const at65 = new AggregateError([...noise(DB_ERRORS_MAX_NODES - 1), pgError("23505", CLAIM_INDEX)]);
    expect(classifyDbError(at65)).toEqual({ kind: "unknown" });
  });

  it("null links in the chain (an errors element, meta, a constraint) are skipped, not fatal", () => {
    const claim = () => pgError("23505", CLAIM_INDEX);
    expect(classifyDbError(new AggregateError([null, claim()]))).toEqual({ kind: "already_claimed" });
    expect(classifyDbError(Object.assign(new Error("x", { cause: claim() }), { meta: null }))).toEqual({
      kind: "already_claimed",
    });
    expect(classifyDbError({ originalCode: "23505", constraint: null })).toEqual({
      kind: "unique_violation",
      constraint: null,
    });
  });

  it("follows AggregateError.errors", () => {
    expect(classifyDbError(new AggregateError([new Error("other"), pgError("23505", CLAIM_INDEX)]))).toEqual({
      kind: "already_claimed",
    });
    expect(classifyDbError(new AggregateError([pgError("40P01")]))).toEqual({ kind: "retryable", sqlstate: "40P01" });
  });

  it("contradictory evidence is never already_claimed", () => {
    // A claim 23505 next to a 23505 on another index.
    const mixedIndexes = new AggregateError([pgError("23505", CLAIM_INDEX), pgError("23505", BANK_CHARGE_INDEX)]);
    expect(classifyDbError(mixedIndexes)).toEqual({ kind: "unique_violation", constraint: CLAIM_INDEX });
    // A claim 23505 wrapping a 23505 that names no index.
    const unnamed = pgError("23505", CLAIM_INDEX);
    unnamed.cause = prismaError("P2002", uniqueCause({ fields: ["user_id"] }));
    expect(classifyDbError(unnamed).kind).toBe("unique_violation");
    // A claim 23505 next to another SQLSTATE.
    expect(classifyDbError(new AggregateError([pgError("23505", CLAIM_INDEX), pgError("23514")]))).toEqual({
      kind: "unknown",
    });
    expect(classifyDbError(new AggregateError([pgError("23505", CLAIM_INDEX), pgError("40001")]))).toEqual({
      kind: "unknown",
    });
  });

  it("matches Prisma errors by name: a Prisma-shaped error from another copy of the runtime is still read", () => {
    const foreign = Object.assign(new Error("from a second runtime copy"), {
      name: "PrismaClientKnownRequestError",
      code: "P2002",
      clientVersion: "7.10.1",
      meta: { driverAdapterError: new FakeDriverAdapterError(uniqueCause({ index: CLAIM_INDEX })) },
    });
    expect(foreign).not.toBeInstanceOf(PrismaClientKnownRequestError);
    expect(classifyDbError(foreign)).toEqual({ kind: "already_claimed" });
  });

  it("never reads a Prisma error's own code as a SQLSTATE, nor Node errno codes", () => {
    // P0001 is a real SQLSTATE (raise_exception), but on an error named PrismaClient* `code` is Prisma's.
    const prismaNamed = Object.assign(new Error("x"), { name: "PrismaClientKnownRequestError", code: "40001" });
    expect(classifyDbError(prismaNamed)).toEqual({ kind: "unknown" });
    expect(classifyDbError(Object.assign(new Error("x"), { code: "P2002" }))).toEqual({ kind: "unknown" });
    // Socket errnos are not SQLSTATEs: they say the connection failed, never anything about a row.
    expect(classifyDbError(Object.assign(new Error("x"), { code: "EPIPE" }))).toEqual({
      kind: "connection_lost",
      cause: "EPIPE",
    });
    expect(classifyDbError(Object.assign(new Error("x"), { code: "EACCES" }))).toEqual({ kind: "unknown" });
    // So a wrapper that copies such a code does not count as a second, contradictory database error.
    for (const code of ["P2002", "EPIPE"]) {
      const wrapper = Object.assign(new Error("wrapper", { cause: pgError("23505", CLAIM_INDEX) }), { code });
      expect(classifyDbError(wrapper)).toEqual({ kind: "already_claimed" });
    }
  });

  it("gives unknown for non-errors, throwing getters and revoked proxies, and never throws", () => {
    for (const value of [undefined, null, "23505", 23505, true, Symbol("x"), () => 1]) {
      expect(classifyDbError(value)).toEqual({ kind: "unknown" });
    }
    const hostile = new Error("hostile");
    Object.defineProperty(hostile, "cause", {
      get() {
        throw new Error("getter");
      },
    });
    expect(classifyDbError(hostile)).toEqual({ kind: "unknown" });
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(classifyDbError(proxy)).toEqual({ kind: "unknown" });
    expect(classifyDbError(new Error("x", { cause: proxy }))).toEqual({ kind: "unknown" });
  });
});

describe("classifyDbError: other constraint violations", () => {
  it("23514 from Prisma is check_violation, with the name taken from originalMessage (diagnostic only)", () => {
    const cause: AdapterCause = {
      originalCode: "23514",
      originalMessage: 'new row for relation "wallets" violates check constraint "wallets_balance_range"',
      kind: "postgres",
      code: "23514",
      severity: "ERROR",
      message: 'new row for relation "wallets" violates check constraint "wallets_balance_range"',
      detail: "Failing row contains (u1, -5, USD).",
      column: undefined,
      hint: undefined,
    };
    expect(classifyDbError(prismaError("P2039", cause))).toEqual({
      kind: "check_violation",
      constraint: "wallets_balance_range",
    });
    // A quoted name with an escaped double quote.
    const quoted = { ...cause, originalMessage: 'violates check constraint "odd""name"' };
    expect(classifyDbError(prismaError("P2010", quoted))).toEqual({ kind: "check_violation", constraint: 'odd"name' });
    // A message in another form names nothing: the verdict stands, without a name.
    const unnamed = { ...cause, originalMessage: "check violation" };
    expect(classifyDbError(prismaError("P2010", unnamed))).toEqual({ kind: "check_violation", constraint: null });
    // A message alone never makes a check_violation.
    expect(classifyDbError(new Error(cause.originalMessage))).toEqual({ kind: "unknown" });
  });

  it("23514 from pg is check_violation with pg's structured constraint name", () => {
    expect(classifyDbError(pgError("23514", "wallets_balance_range"))).toEqual({
      kind: "check_violation",
      constraint: "wallets_balance_range",
    });
  });

  it("23503 is foreign_key_violation, from Prisma ({index} or {fields}) and from pg", () => {
    const cause: AdapterCause = {
      originalCode: "23503",
      originalMessage: 'violates foreign key constraint "ledger_entries_user_id_fkey"',
      kind: "ForeignKeyConstraintViolation",
      constraint: { index: "ledger_entries_user_id_fkey" },
    };
    expect(classifyDbError(prismaError("P2003", cause))).toEqual({
      kind: "foreign_key_violation",
      constraint: "ledger_entries_user_id_fkey",
    });
    expect(classifyDbError(prismaError("P2003", { ...cause, constraint: { fields: ["user_id"] } }))).toEqual({
      kind: "foreign_key_violation",
      constraint: null,
    });
    expect(classifyDbError(wrap(pgError("23503", "ledger_entries_user_id_fkey"), 2))).toEqual({
      kind: "foreign_key_violation",
      constraint: "ledger_entries_user_id_fkey",
    });
  });

  it("any other SQLSTATE is unknown", () => {
    expect(classifyDbError(pgError("22012"))).toEqual({ kind: "unknown" });
    expect(classifyDbError(pgError("42P10"))).toEqual({ kind: "unknown" }); // C03: no matching ON CONFLICT index
    expect(classifyDbError(pgError("42704"))).toEqual({ kind: "unknown" }); // C03: ON CONSTRAINT on an index
    const cause: AdapterCause = { originalCode: "22012", originalMessage: "division by zero", kind: "postgres" };
    expect(classifyDbError(prismaError("P2010", cause))).toEqual({ kind: "unknown" });
  });
});

describe("classifyDbError: what counts as a SQLSTATE", () => {
  it("five characters of a PostgreSQL error class (digits, F0, HV, P0, XX): next to a claim conflict, a contradiction", () => {
    for (const sqlstate of ["0A000", "F0001", "HV000", "P0001", "XX000"]) {
      const mixed = new AggregateError([pgError("23505", CLAIM_INDEX), pgError(sqlstate)]);
      expect(classifyDbError(mixed), sqlstate).toEqual({ kind: "unknown" });
    }
  });

  it("a code that only contains a SQLSTATE, or is one character off, is not one and is ignored", () => {
    for (const code of ["x23505", "235050", "2350", "A0000", "P1000"]) {
      const mixed = new AggregateError([pgError("23505", CLAIM_INDEX), pgError(code)]);
      expect(classifyDbError(mixed), code).toEqual({ kind: "already_claimed" });
    }
    // Only strings: a number that reads like one is not a SQLSTATE.
    const numeric = new AggregateError([pgError("23505", CLAIM_INDEX), { code: 23505 }]);
    expect(classifyDbError(numeric)).toEqual({ kind: "already_claimed" });
  });

  it("an empty constraint or index name is no name: never the claim index, reported as null", () => {
    expect(classifyDbError(pgError("23505", ""))).toEqual({ kind: "unique_violation", constraint: null });
    expect(classifyDbError(prismaError("P2002", uniqueCause({ index: "" })))).toEqual({
      kind: "unique_violation",
      constraint: null,
    });
  });
});

describe("classifyDbError: 40001 and 40P01", () => {
  it("detects serialization failures and deadlocks from pg, Prisma raw and Prisma model calls, wrapped or not", () => {
    for (const sqlstate of ["40001", "40P01"] as const) {
      const verdict = { kind: "retryable", sqlstate };
      expect(classifyDbError(pgError(sqlstate))).toEqual(verdict);
      expect(classifyDbError(wrap(pgError(sqlstate), 3))).toEqual(verdict);
      expect(classifyDbError(prismaError("P2010", retryableCause(sqlstate)))).toEqual(verdict);
      expect(classifyDbError(prismaError("P2034", retryableCause(sqlstate), { modelName: "Wallet" }))).toEqual(verdict);
      expect(classifyDbError(wrap(prismaError("P2034", retryableCause(sqlstate)), 2))).toEqual(verdict);
    }
    // A mix of the two is still retryable; the outermost one is reported.
    expect(classifyDbError(new AggregateError([pgError("40P01"), pgError("40001")]))).toEqual({
      kind: "retryable",
      sqlstate: "40P01",
    });
  });

  it("nothing else is retryable", () => {
    expect(classifyDbError(pgError("23505", CLAIM_INDEX)).kind).not.toBe("retryable");
    expect(classifyDbError(new Error("deadlock detected (40P01)")).kind).not.toBe("retryable");
    expect(classifyDbError(pgError("40002")).kind).not.toBe("retryable"); // transaction_integrity_constraint_violation
    expect(classifyDbError(pgError("55P03")).kind).not.toBe("retryable"); // lock_not_available
    expect(classifyDbError(undefined).kind).not.toBe("retryable");
  });
});

describe("withTransactionRetry", () => {
  it("retries a deadlock and returns the value of the attempt that succeeds", async () => {
    const deadlock = pgError("40P01");
    const fn = vi.fn<() => Promise<string>>().mockRejectedValueOnce(deadlock).mockResolvedValueOnce("committed");
    const onRetry = vi.fn();
    await expect(withTransactionRetry(fn, { onRetry })).resolves.toBe("committed");
    expect(fn).toHaveBeenCalledTimes(2);
    expect(onRetry).toHaveBeenCalledTimes(1);
    expect(onRetry.mock.calls[0]?.[0]).toMatchObject({ attempt: 1, sqlstate: "40P01", error: deadlock });
  });

  it("rethrows a non-retryable error at once, unchanged, without retrying", async () => {
    const claimed = prismaError("P2002", uniqueCause({ index: CLAIM_INDEX }));
    const fn = vi.fn<() => Promise<void>>().mockRejectedValue(claimed);
    await expect(withTransactionRetry(fn)).rejects.toBe(claimed);
    expect(fn).toHaveBeenCalledTimes(1);
    const plain = new Error("bug");
    const fn2 = vi.fn<() => Promise<void>>().mockRejectedValue(plain);
    await expect(withTransactionRetry(fn2, { attempts: 5 })).rejects.toBe(plain);
    expect(fn2).toHaveBeenCalledTimes(1);
  });

  it("gives up after `attempts` runs (3 by default) and throws the last error", async () => {
    const errors = [pgError("40001"), pgError("40P01"), prismaError("P2034", retryableCause("40001"))];
    let call = 0;
    const fn = vi.fn(async () => {
      throw errors[call++];
    });
    await expect(withTransactionRetry(fn)).rejects.toBe(errors[2]);
    expect(fn).toHaveBeenCalledTimes(3);

    const once = vi.fn<() => Promise<void>>().mockRejectedValue(pgError("40001"));
    await expect(withTransactionRetry(once, { attempts: 1 })).rejects.toMatchObject({ code: "40001" });
    expect(once).toHaveBeenCalledTimes(1);
  });

  it("refuses an attempts value outside 1..10 before running anything", async () => {
    for (const attempts of [0, -1, 1.5, 11, Number.POSITIVE_INFINITY]) {
      const fn = vi.fn(async () => 1);
      await expect(withTransactionRetry(fn, { attempts })).rejects.toThrow(
        new RangeError(`attempts must be an integer in 1..10, got ${attempts}`),
      );
      expect(fn).not.toHaveBeenCalled();
    }
    // The bound itself is allowed.
    await expect(withTransactionRetry(async () => "ran", { attempts: 10 })).resolves.toBe("ran");
  });

  it("tells onRetry why it retries and how long it waits: a conflict, its SQLSTATE and the jittered delay", async () => {
    const conflict = pgError("40001");
    const fn = vi.fn<() => Promise<string>>().mockRejectedValueOnce(conflict).mockResolvedValueOnce("committed");
    const infos: TransactionRetryInfo[] = [];
    await withTransactionRetry(fn, { onRetry: (info) => infos.push(info) });
    expect(infos).toHaveLength(1);
    expect(infos[0]).toMatchObject({ attempt: 1, reason: "conflict", sqlstate: "40001", error: conflict });
    expect(infos[0]!.delayMs).toBeGreaterThanOrEqual(5);
    expect(infos[0]!.delayMs).toBeLessThanOrEqual(10);
  });

  it("backs off with equal jitter: never zero, doubling, capped", () => {
    expect(transactionRetryDelayMs(1, () => 0)).toBe(5);
    expect(transactionRetryDelayMs(1, () => 0.999999)).toBe(10);
    expect(transactionRetryDelayMs(2, () => 0)).toBe(10);
    expect(transactionRetryDelayMs(2, () => 0.999999)).toBe(20);
    expect(transactionRetryDelayMs(30, () => 0.999999)).toBe(TRANSACTION_RETRY_MAX_DELAY_MS);
    for (let i = 0; i < 200; i += 1) {
      const delay = transactionRetryDelayMs(1);
      expect(delay).toBeGreaterThanOrEqual(5);
      expect(delay).toBeLessThanOrEqual(10);
    }
  });
});

describe("connection_lost (failover)", () => {
  it("class 08, 57P01/57P02/57P03 and 25006 are a lost connection, through wrappers too", () => {
    for (const code of ["08006", "08001", "57P01", "57P02", "57P03", "25006"]) {
      expect(classifyDbError(pgError(code))).toEqual({ kind: "connection_lost", cause: code });
      expect(classifyDbError(new Error("wrapped", { cause: pgError(code) }))).toMatchObject({
        kind: "connection_lost",
      });
    }
    expect(
      classifyDbError(prismaError("P2010", { kind: "postgres", originalCode: "57P01", originalMessage: "x" })),
    ).toMatchObject({ kind: "connection_lost", cause: "57P01" });
  });

  it("node-postgres's own connection errors (no SQLSTATE) and socket errnos are a lost connection", () => {
    expect(classifyDbError(new Error("Connection terminated unexpectedly"))).toEqual({
      kind: "connection_lost",
      cause: "Connection terminated unexpectedly",
    });
    expect(classifyDbError(new Error("timeout exceeded when trying to connect"))).toMatchObject({
      kind: "connection_lost",
    });
    expect(classifyDbError(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }))).toEqual({
      kind: "connection_lost",
      cause: "ECONNREFUSED",
    });
  });

  it("every socket errno and every fixed node-postgres connection message on the list is a lost connection", () => {
    for (const code of [
      "ECONNREFUSED",
      "ECONNRESET",
      "EPIPE",
      "ETIMEDOUT",
      "EHOSTUNREACH",
      "ENETUNREACH",
      "ECONNABORTED",
    ]) {
      const error = Object.assign(new Error(`socket ${code}`), { code });
      expect(classifyDbError(error)).toEqual({ kind: "connection_lost", cause: code });
      expect(classifyDbError(new Error("wrapped", { cause: error }))).toEqual({ kind: "connection_lost", cause: code });
    }
    for (const message of [
      "Connection terminated unexpectedly",
      "Connection terminated",
      "Connection terminated due to connection timeout",
      "timeout exceeded when trying to connect",
      "Client has encountered a connection error and is not queryable",
      "Client was closed and is not queryable",
    ]) {
      expect(classifyDbError(new Error(message))).toEqual({ kind: "connection_lost", cause: message });
    }
  });

  it("a message that merely mentions a connection, or a database error with a SQLSTATE, is not", () => {
    expect(classifyDbError(new Error("Connection terminated unexpectedly!"))).toEqual({ kind: "unknown" });
    expect(classifyDbError(pgError("23505", CLAIM_INDEX, "Connection terminated unexpectedly"))).toEqual({
      kind: "already_claimed",
    });
    // A lost connection mixed with another SQLSTATE is ambiguous: unknown, never retried.
    const mixed = Object.assign(new Error("outer"), { errors: [pgError("57P01"), pgError("23514")] });
    expect(classifyDbError(mixed)).toEqual({ kind: "unknown" });
  });

  it("withTransactionRetry runs a transaction that lost its connection again, within the time bound only", async () => {
    const lost = pgError("57P01");
    const fn = vi.fn<() => Promise<string>>().mockRejectedValueOnce(lost).mockResolvedValueOnce("committed");
    const onRetry = vi.fn();
    await expect(withTransactionRetry(fn, { onRetry, failoverRetryMs: 5_000 })).resolves.toBe("committed");
    expect(onRetry.mock.calls[0]?.[0]).toMatchObject({ attempt: 1, reason: "connection_lost", sqlstate: null });

    const always = vi.fn<() => Promise<string>>().mockRejectedValue(lost);
    const started = Date.now();
    await expect(withTransactionRetry(always, { failoverRetryMs: 300 })).rejects.toBe(lost);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(always.mock.calls.length).toBeGreaterThanOrEqual(2);

    const off = vi.fn<() => Promise<string>>().mockRejectedValue(lost);
    await expect(withTransactionRetry(off, { failoverRetryMs: 0 })).rejects.toBe(lost);
    expect(off).toHaveBeenCalledTimes(1);
  });

  it("each failover retry is logged at warn with the attempt, the back-off, the cause and the error's message", async () => {
    const warn = vi.spyOn(log(), "warn");
    try {
      const lost = pgError("57P01", undefined, "terminating connection due to administrator command");
      const fn = vi
        .fn<() => Promise<string>>()
        .mockRejectedValueOnce(lost)
        // A thrown non-Error (some libraries reject with plain objects): its string form is logged.
        .mockRejectedValueOnce({ code: "ECONNRESET", toString: () => "socket reset by peer" })
        .mockResolvedValueOnce("committed");
      await expect(withTransactionRetry(fn, { failoverRetryMs: 5_000 })).resolves.toBe("committed");
      expect(warn).toHaveBeenCalledTimes(2);
      const [fields, text] = warn.mock.calls[0] as unknown as [Record<string, unknown>, string];
      expect(text).toBe("database connection lost: retrying");
      expect(fields).toMatchObject({
        attempt: 1,
        cause: "57P01",
        message: "terminating connection due to administrator command",
      });
      expect(fields.delayMs).toBeGreaterThanOrEqual(50);
      expect(warn.mock.calls[1]?.[0]).toMatchObject({
        attempt: 2,
        cause: "ECONNRESET",
        message: "socket reset by peer",
      });
    } finally {
      warn.mockRestore();
    }
  });

  it("failover back-off: 100 ms doubling to 1 s, equal jitter", () => {
    expect(failoverRetryDelayMs(1, () => 0)).toBe(50);
    expect(failoverRetryDelayMs(1, () => 0.999)).toBe(100);
    expect(failoverRetryDelayMs(2, () => 0)).toBe(100);
    expect(failoverRetryDelayMs(10, () => 0.999)).toBe(FAILOVER_RETRY_MAX_DELAY_MS);
    expect(failoverRetryDelayMs(100, () => 0)).toBe(FAILOVER_RETRY_MAX_DELAY_MS / 2);
  });
});
