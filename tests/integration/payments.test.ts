/**
 * Payments: the wallet lock, then claim, debit, terminal state and stored response in one statement, all in one
 * call of the function ledger_decide_payment (contract sections 1, 3 and 8; docs/decisions/040). Real PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { findEntryByKey } from "../../lib/ledger/claim";
import { operationKey } from "../../lib/ledger/keys";
import {
  type DecidedPayment,
  decidePaymentUnderWalletLock,
  type PaymentDecisionRequest,
} from "../../lib/ledger/payment-statement";
import type { Queryable } from "../../lib/ledger/queryable";
import { paymentView } from "../../lib/ledger/views";
import { createPayment, paymentResponses } from "../../lib/payments/create-payment";
import { createTestUser, testPool } from "../helpers/db";
import { functionDefinition } from "../helpers/function-files";
import { balanceOf, countRows, dedicatedClient, freshRefId, seedBalance, transitionsOf } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";

const pay = (userId: string, orderId: string, amountMinor: number) =>
  createPayment({ userId, orderId, amountMinor, currency: "USD" });

describe("createPayment", () => {
  it("debits once and replays the first response byte for byte", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 500);
    const orderId = freshRefId("order");
    const first = await pay(user.id, orderId, 200);
    expect(first).toMatchObject({ kind: "response", replayed: false, response: { status: 201 } });
    const second = await pay(user.id, orderId, 200);
    if (first.kind !== "response" || second.kind !== "response") throw new Error("expected responses");
    expect(second.replayed).toBe(true);
    expect(second.response).toEqual(first.response);
    expect(JSON.parse(first.response.body)).toMatchObject({
      payment: { orderId, amount: 200, currency: "USD", status: "succeeded" },
    });
    expect(await balanceOf(user.id)).toBe(300);
  });

  it("402 insufficient_funds is stored and replays as 402 even after the balance grows (an outcome never flips)", async () => {
    const user = await createTestUser();
    const orderId = freshRefId("order");
    const first = await pay(user.id, orderId, 100);
    expect(first).toMatchObject({ kind: "response", response: { status: 402 } });
    if (first.kind !== "response") return;
    expect(JSON.parse(first.response.body)).toMatchObject({ code: "insufficient_funds", status: 402 });
    await seedBalance(user.id, 1000);
    const again = await pay(user.id, orderId, 100);
    expect(again).toEqual({ kind: "response", replayed: true, response: first.response });
    expect(await balanceOf(user.id)).toBe(1000);
  });

  it("same order id with another amount is refused with the field, and nothing moves", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 1000);
    const orderId = freshRefId("order");
    await pay(user.id, orderId, 100);
    expect(await pay(user.id, orderId, 150)).toEqual({ kind: "mismatch", fields: ["amount"] });
    expect(await balanceOf(user.id)).toBe(900);
  });

  it("payee and note are fingerprinted: another payee or note is refused like another amount, the same ones replay (docs/decisions/055)", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 1000);
    const orderId = freshRefId("order");
    const base = { userId: user.id, orderId, amountMinor: 100, currency: "USD" };
    const first = await createPayment({ ...base, payee: "Corner Coffee", note: "Two flat whites" });
    if (first.kind !== "response") throw new Error("expected a response");
    expect(first.response.status).toBe(201);
    // The 201 names them, between the order id and the amount, as the view writes them.
    expect(first.response.body).toBe(
      JSON.stringify({ payment: paymentView((await findEntryByKey(operationKey(user.id, "payment", orderId)))!) }),
    );
    expect(JSON.parse(first.response.body).payment).toMatchObject({
      orderId,
      payee: "Corner Coffee",
      note: "Two flat whites",
      amount: 100,
    });
    const row = await findEntryByKey(operationKey(user.id, "payment", orderId));
    expect(row?.params).toEqual({ amount: 100, currency: "USD", payee: "Corner Coffee", note: "Two flat whites" });

    expect(await createPayment({ ...base, payee: "City Books", note: "Two flat whites" })).toEqual({
      kind: "mismatch",
      fields: ["payee"],
    });
    expect(await createPayment({ ...base, payee: "Corner Coffee", note: "One flat white" })).toEqual({
      kind: "mismatch",
      fields: ["note"],
    });
    // Leaving one out is a difference too: a field present on one side only.
    expect(await createPayment({ ...base, payee: "Corner Coffee" })).toEqual({ kind: "mismatch", fields: ["note"] });
    expect(await createPayment(base)).toEqual({ kind: "mismatch", fields: ["note", "payee"] });
    expect(await createPayment({ ...base, amountMinor: 200, payee: "City Books", note: "Two flat whites" })).toEqual({
      kind: "mismatch",
      fields: ["amount", "payee"],
    });
    const again = await createPayment({ ...base, payee: "Corner Coffee", note: "Two flat whites" });
    expect(again).toEqual({ kind: "response", replayed: true, response: first.response });
    expect(await balanceOf(user.id)).toBe(900);
    expect(await countRows(user.id, "payment", orderId)).toBe(1);
  });

  it("a payment without payee or note keeps the parameters and the 201 it always had", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 500);
    const orderId = freshRefId("order");
    const first = await pay(user.id, orderId, 200);
    if (first.kind !== "response") throw new Error("expected a response");
    const row = await findEntryByKey(operationKey(user.id, "payment", orderId));
    expect(row?.params).toEqual({ amount: 200, currency: "USD" });
    expect(Object.keys(JSON.parse(first.response.body).payment)).toEqual([
      "orderId",
      "amount",
      "currency",
      "status",
      "failureReason",
      "createdAt",
      "updatedAt",
    ]);
    // A payee alone: only it is named.
    const withPayee = await createPayment({
      userId: user.id,
      orderId: freshRefId("order"),
      amountMinor: 100,
      currency: "USD",
      payee: "Metro Transit",
    });
    if (withPayee.kind !== "response") throw new Error("expected a response");
    expect(Object.keys(JSON.parse(withPayee.response.body).payment).slice(0, 3)).toEqual([
      "orderId",
      "payee",
      "amount",
    ]);
  });

  it("a credit committed while the payment waits on the wallet lock: the payment decided on the new balance is debited (storm finding)", async () => {
    // The payment waits on the wallet row a credit holds. When the credit commits, the payment must decide on the
    // new version and debit that same version. A statement that locked the row itself (its snapshot taken before
    // the wait) decided on the new version and its debit re-checked it as no longer claimed: 201, no debit.
    // Negative control (runnable, below): without the function's lock statement the payment decides on 100 (402).
    const user = await createTestUser();
    await seedBalance(user.id, 100);
    const credit = await dedicatedClient("payments-race-credit");
    try {
      await credit.query("BEGIN");
      await credit.query("UPDATE wallets SET balance_minor = balance_minor + 4900 WHERE user_id = $1", [user.id]);
      const { rows } = await credit.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      const payment = pay(user.id, freshRefId("race"), 400);
      await waitForBlockedSessions({ blockedBy: rows[0]!.pid }, 1);
      await credit.query("COMMIT");
      const result = await payment;
      expect(result.kind === "response" ? result.response.status : result.kind).toBe(201);
    } finally {
      await credit.end();
    }
    // 100 + 4900 - 400: the row says succeeded, so the wallet was debited (invariant 7.1).
    expect(await balanceOf(user.id)).toBe(4600);
  });

  it("50 concurrent payments of 10 with different order ids on a balance of 100: exactly 10 succeed, 40 get 402, balance 0", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 100);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => pay(user.id, `order-${i}-${user.id.slice(-8)}`, 10)),
    );
    const statuses = results.map((r) => (r.kind === "response" ? r.response.status : r.kind));
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(40);
    expect(await balanceOf(user.id)).toBe(0);
    const rows = await testPool().query(
      "SELECT status, count(*)::int AS n FROM ledger_entries WHERE user_id = $1 GROUP BY status ORDER BY status",
      [user.id],
    );
    expect(rows.rows).toEqual([
      { status: "failed", n: 40 },
      { status: "succeeded", n: 10 },
    ]);
  });

  it("C10: concurrent identical payments give one row, one debit and identical responses", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 1000);
    const orderId = freshRefId("order");
    const results = await Promise.all(Array.from({ length: 20 }, () => pay(user.id, orderId, 70)));
    const bodies = new Set(
      results.map((r) => (r.kind === "response" ? `${r.response.status} ${r.response.body}` : r.kind)),
    );
    expect(bodies.size).toBe(1);
    expect(results.filter((r) => r.kind === "response" && !r.replayed)).toHaveLength(1);
    expect(await countRows(user.id, "payment", orderId)).toBe(1);
    expect(await balanceOf(user.id)).toBe(930);
  });

  it("the one statement stores what the two-step path stored: the view of the row byte for byte, a terminal row with no lease, two audit rows", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 500);
    const orderId = freshRefId("order");
    const first = await pay(user.id, orderId, 125);
    if (first.kind !== "response") throw new Error("expected a response");
    const row = await findEntryByKey(operationKey(user.id, "payment", orderId));
    if (!row) throw new Error("no row");
    expect(first.response).toEqual({ status: 201, body: JSON.stringify({ payment: paymentView(row) }) });
    expect(row.response).toEqual(first.response);
    expect(row).toMatchObject({ status: "succeeded", failureReason: null, leaseOwner: null, leaseExpiresAt: null });
    expect(row.fencingToken).toBe(1);
    expect(row.updatedAt).toEqual(row.createdAt);
    expect(await transitionsOf(user.id, row.id)).toEqual([
      { from: null, to: "initiated", actor: "request", fencingToken: 1 },
      { from: "initiated", to: "succeeded", actor: "request", fencingToken: 1 },
    ]);
    expect(await balanceOf(user.id)).toBe(375);
  });

  it("a wallet that covers exactly the amount is debited to 0; one minor unit short is 402 with the amount in plain words", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 250);
    expect(await pay(user.id, freshRefId("order"), 251)).toMatchObject({ response: { status: 402 } });
    const exact = await pay(user.id, freshRefId("order"), 250);
    expect(exact).toMatchObject({ response: { status: 201 } });
    expect(await balanceOf(user.id)).toBe(0);
    const short = await pay(user.id, freshRefId("order"), 1);
    if (short.kind !== "response") throw new Error("expected a response");
    expect(JSON.parse(short.response.body)).toMatchObject({
      code: "insufficient_funds",
      detail: "The balance does not cover 0.01 USD.",
    });
  });

  it("an open debt refuses the payment whatever the balance: a stored 402 debt_outstanding naming the debt, no debit, audit rows to failed", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 10_000);
    await testPool().query("UPDATE wallets SET debt_minor = 1205 WHERE user_id = $1", [user.id]);
    const orderId = freshRefId("order");
    const first = await pay(user.id, orderId, 100);
    if (first.kind !== "response") throw new Error("expected a response");
    expect(first.response.status).toBe(402);
    expect(JSON.parse(first.response.body)).toMatchObject({
      code: "debt_outstanding",
      detail: "The wallet owes 12.05 USD from a disputed top-up; payments resume once a credit repays it.",
    });
    const row = await findEntryByKey(operationKey(user.id, "payment", orderId));
    expect(row).toMatchObject({ status: "failed", failureReason: "debt_outstanding", response: first.response });
    expect(await transitionsOf(user.id, row!.id)).toEqual([
      { from: null, to: "initiated", actor: "request", fencingToken: 1 },
      { from: "initiated", to: "failed", actor: "request", fencingToken: 1 },
    ]);
    expect(await balanceOf(user.id)).toBe(10_000);
    // Once the debt is repaid the same order id still replays its 402 (an outcome never flips); a new one pays.
    await testPool().query("UPDATE wallets SET debt_minor = 0 WHERE user_id = $1", [user.id]);
    expect(await pay(user.id, orderId, 100)).toEqual({ kind: "response", replayed: true, response: first.response });
    expect(await pay(user.id, freshRefId("order"), 100)).toMatchObject({ response: { status: 201 } });
    expect(await balanceOf(user.id)).toBe(9_900);
  });

  it("a debt of less than one major unit is written with its leading zero (0.07), as formatMinor writes it", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 100);
    await testPool().query("UPDATE wallets SET debt_minor = 7 WHERE user_id = $1", [user.id]);
    const refused = await pay(user.id, freshRefId("order"), 10);
    if (refused.kind !== "response") throw new Error("expected a response");
    expect(JSON.parse(refused.response.body).detail).toContain("The wallet owes 0.07 USD");
  });

  it("a user without a wallet row is refused 402 insufficient_funds; the row the lock made holds nothing", async () => {
    const user = await createTestUser();
    const first = await pay(user.id, freshRefId("order"), 1);
    expect(first).toMatchObject({ response: { status: 402 } });
    const wallets = await testPool().query("SELECT balance_minor, debt_minor FROM wallets WHERE user_id = $1", [
      user.id,
    ]);
    expect(wallets.rows).toEqual([{ balance_minor: 0, debt_minor: 0 }]);
  });

  describe("the function's guards and errors (contract section 8; prisma/functions/ledger_decide_payment.sql)", () => {
    /**
     * decidePaymentUnderWalletLock on a client of its own, inside a transaction that is always rolled back, after
     * the database function `name` (ledger_decide_payment, or a helper it calls) was replaced in that transaction by
     * its file's definition (prisma/functions/<name>.sql) passed through `rewrite` (DDL is transactional: no other
     * session sees the change, and the rollback undoes it). `inspect` reads, on the same client before the rollback,
     * what the call wrote.
     */
    async function decideWithRewrittenFunction<T>(
      name: string,
      request: PaymentDecisionRequest,
      rewrite: (definition: string) => string,
      inspect: (client: Queryable) => Promise<T>,
    ): Promise<{ decided: DecidedPayment | null; seen: T }> {
      const client = await testPool().connect();
      try {
        await client.query("BEGIN");
        const definition = functionDefinition(name);
        const rewritten = rewrite(definition);
        if (rewritten === definition) throw new Error("the rewrite no longer matches the function's text");
        await client.query(rewritten);
        const decided = await decidePaymentUnderWalletLock(client, request);
        return { decided, seen: await inspect(client) };
      } finally {
        await client.query("ROLLBACK");
        client.release();
      }
    }

    const rowsOn = async (client: Queryable, userId: string, refId: string) =>
      Number(
        (
          await client.query({
            text: "SELECT count(*) AS n FROM ledger_entries WHERE user_id = $1 AND type = 'payment' AND ref_id = $2",
            values: [userId, refId],
          })
        ).rows[0]?.n,
      );

    const request = (userId: string, refId: string) => ({
      key: operationKey(userId, "payment", refId),
      amountMinor: 100,
      currency: "USD",
      params: { amount: 100, currency: "USD" },
      responses: paymentResponses(refId, 100, "USD"),
    });

    it("C01: a 23505 that PostgreSQL raises on the claim index (the function without ON CONFLICT) is a lost claim: null, nothing debited", async () => {
      const user = await createTestUser();
      await seedBalance(user.id, 1000);
      const orderId = freshRefId("order");
      expect(await decidePaymentUnderWalletLock(testPool(), request(user.id, orderId))).not.toBeNull();
      const withoutOnConflict = (definition: string) =>
        definition.replace("ON CONFLICT (user_id, type, ref_id) DO NOTHING", "");
      const { decided } = await decideWithRewrittenFunction(
        "ledger_claim",
        request(user.id, orderId),
        withoutOnConflict,
        async () => null,
      );
      expect(decided).toBeNull();
      expect(await balanceOf(user.id)).toBe(900);
      expect(await countRows(user.id, "payment", orderId)).toBe(1);
    });

    it("negative control of the wait on the lock: the decision read without the lock, a payment staged as in the credit race decides on the old balance (402)", async () => {
      // The race test above, with the function's lock replaced by a plain read: the payment no longer waits for the
      // credit holding the wallet row, decides on the committed 100 and refuses 400, so that test would fail (402,
      // 5000).
      const user = await createTestUser();
      await seedBalance(user.id, 100);
      const credit = await dedicatedClient("payments-race-credit-control");
      try {
        await credit.query("BEGIN");
        await credit.query("UPDATE wallets SET balance_minor = balance_minor + 4900 WHERE user_id = $1", [user.id]);
        const withoutLock = (definition: string) =>
          definition.replace(
            "v_wallet := ledger_lock_wallet(p_user_id => p_user_id, p_currency => p_currency);",
            "SELECT w.* INTO v_wallet FROM wallets w WHERE w.user_id = p_user_id;",
          );
        const orderId = freshRefId("race");
        const { decided, seen } = await decideWithRewrittenFunction(
          "ledger_decide_payment",
          { ...request(user.id, orderId), amountMinor: 400, params: { amount: 400, currency: "USD" } },
          withoutLock,
          (client) => rowsOn(client, user.id, orderId),
        );
        expect(decided?.response.status).toBe(402);
        expect(seen).toBe(1);
        await credit.query("COMMIT");
      } finally {
        await credit.end();
      }
      expect(await balanceOf(user.id)).toBe(5000);
    });

    it("negative control of the spending rule: with ledger_debit_verdict blind to the debt, a payment from a wallet that owes is debited", async () => {
      // The debt test above, through the one statement of the rule with its debt clause removed: the decision and the
      // debit's own guard both call it, so the payment succeeds and the owed money is spent (that test would fail).
      const user = await createTestUser();
      await seedBalance(user.id, 1000);
      await testPool().query("UPDATE wallets SET debt_minor = 300 WHERE user_id = $1", [user.id]);
      const blindToDebt = (definition: string) =>
        definition.replace("WHEN (p_wallet).debt_minor > 0 THEN 'debt_outstanding'", "WHEN false THEN NULL");
      const { decided, seen } = await decideWithRewrittenFunction(
        "ledger_debit_verdict",
        request(user.id, freshRefId("order")),
        blindToDebt,
        async (client) =>
          Number(
            (await client.query({ text: "SELECT balance_minor FROM wallets WHERE user_id = $1", values: [user.id] }))
              .rows[0]?.balance_minor,
          ),
      );
      expect(decided?.response.status).toBe(201);
      expect(seen).toBe(900);
    });

    it("any other error is thrown as it comes (a user that does not exist: 23503), and nothing is written", async () => {
      const userId = `missing_${freshRefId("u").replaceAll("-", "")}`;
      await expect(
        decidePaymentUnderWalletLock(testPool(), request(userId, freshRefId("order"))),
      ).rejects.toMatchObject({
        code: "23503",
      });
    });
  });
});
