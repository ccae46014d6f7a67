/**
 * Transfers between users over HTTP (contract section 15): `POST /api/v1/transfers` against the built app, a real
 * PostgreSQL and Redis. A transfer moves money once per `(sender, refId)` however often it is sent, at once or later;
 * its refusals are stored (402, 422 recipient_cannot_receive) or not (unknown recipient, self, the throttle), and the
 * unknown-recipient throttle refuses every recipient once spent, so it cannot be used to test addresses. The
 * statement and the history then name the other user on both sides.
 */
import { describe, expect, it } from "vitest";
import { RECIPIENT_MISS_RULE } from "../../lib/transfers/create-transfer";
import { testPool } from "../helpers/db";
import { api, createApiUser, type ApiUser } from "../helpers/http";
import { balanceOf, countRows, freshRefId, seedBalance } from "../helpers/ledger";

function send(sender: ApiUser, body: Record<string, unknown>) {
  return api("/api/v1/transfers", { token: sender.token, body });
}

/** The recipient's `transfer_in` rows (ref id, amount, params), oldest first. */
async function receivedRows(userId: string) {
  const result = await testPool().query<{
    ref_id: string;
    amount: number;
    status: string;
    params: Record<string, unknown>;
  }>(
    `SELECT ref_id, amount_minor::int AS amount, status, params FROM ledger_entries
      WHERE user_id = $1 AND type = 'transfer_in' ORDER BY id`,
    [userId],
  );
  return result.rows;
}

/** A sender with `balanceMinor` and a recipient with nothing, both with API tokens. */
async function senderAndRecipient(balanceMinor: number): Promise<{ sender: ApiUser; recipient: ApiUser }> {
  const [sender, recipient] = await Promise.all([createApiUser(), createApiUser()]);
  if (balanceMinor > 0) await seedBalance(sender.id, balanceMinor);
  return { sender, recipient };
}

const today = () => new Date().toISOString().slice(0, 10);

describe("POST /api/v1/transfers", () => {
  it("201 with the transfer, replayed byte for byte; the recipient's own entry names the sender", async () => {
    const { sender, recipient } = await senderAndRecipient(1000);
    const refId = freshRefId("tr");
    const body = { refId, to: recipient.email, amount: 250, note: "Lunch" };
    const first = await send(sender, body);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(first.json.transfer).toMatchObject({
      refId,
      to: recipient.email,
      note: "Lunch",
      amount: 250,
      currency: "USD",
      status: "succeeded",
      failureReason: null,
    });
    const again = await send(sender, body);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await balanceOf(sender.id)).toBe(750);
    expect(await balanceOf(recipient.id)).toBe(250);
    const received = await receivedRows(recipient.id);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      amount: 250,
      status: "succeeded",
      params: { from: sender.email, note: "Lunch" },
    });

    // The history (GET /api/v1/entries) and the statement name the other user on each side, with the note.
    const sent = await api("/api/v1/entries?type=transfer", { token: sender.token });
    expect(sent.json.entries).toEqual([expect.objectContaining({ refId, to: recipient.email, note: "Lunch" })]);
    const got = await api("/api/v1/entries?type=transfer_in", { token: recipient.token });
    expect(got.json.entries).toEqual([expect.objectContaining({ from: sender.email, note: "Lunch", amount: 250 })]);
    const found = await api(`/api/v1/entries?q=${encodeURIComponent(sender.email)}`, { token: recipient.token });
    expect(found.json.entries.map((e: { type: string }) => e.type)).toEqual(["transfer_in"]);
    const senderLines = await api(`/api/v1/statement?from=${today()}&to=${today()}`, { token: sender.token });
    expect(senderLines.json.lines.find((l: { kind: string }) => l.kind === "transfer")).toMatchObject({
      counterparty: recipient.email,
      counterpartyAccount: "transfers_in_transit",
      note: "Lunch",
      amount: -250,
    });
    const recipientLines = await api(`/api/v1/statement?from=${today()}&to=${today()}`, { token: recipient.token });
    expect(recipientLines.json.lines).toEqual([
      expect.objectContaining({
        kind: "transfer_in",
        counterparty: sender.email,
        note: "Lunch",
        amount: 250,
        balanceAfter: 250,
      }),
    ]);
    const csv = await api(`/api/v1/statement.csv?from=${today()}&to=${today()}`, { token: recipient.token });
    expect(csv.text).toContain(`"${sender.email}"`);
  });

  it("1000 identical requests at once: one movement (one debit, one transfer_in row), every 201 byte-identical", async () => {
    const { sender, recipient } = await senderAndRecipient(10_000);
    const body = { refId: freshRefId("storm"), to: recipient.email, amount: 700 };
    const results = await Promise.all(Array.from({ length: 1000 }, () => send(sender, body)));
    const byStatus: Record<number, number> = {};
    for (const r of results) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    // One 201 and its replays; past IDEMPOTENCY_WAIT_MS a duplicate may be told 409 request_in_progress instead.
    expect(
      Object.keys(byStatus).filter((s) => s !== "201" && s !== "409"),
      JSON.stringify(byStatus),
    ).toEqual([]);
    const bodies = new Set(results.filter((r) => r.status === 201).map((r) => r.text));
    expect(bodies.size, JSON.stringify(byStatus)).toBe(1);
    expect(await balanceOf(sender.id)).toBe(10_000 - 700);
    expect(await balanceOf(recipient.id)).toBe(700);
    expect(await countRows(sender.id, "transfer", body.refId)).toBe(1);
    expect(await receivedRows(recipient.id)).toHaveLength(1);
    // Afterwards every copy, a 409's retry included, replays the one 201.
    const after = await send(sender, body);
    expect(after.status).toBe(201);
    expect(after.text).toBe([...bodies][0]);
  });

  it("the same refId with another amount: 422 idempotency_key_reused naming the amount; nothing moves again", async () => {
    const { sender, recipient } = await senderAndRecipient(1000);
    const refId = freshRefId("tr");
    expect((await send(sender, { refId, to: recipient.email, amount: 100 })).status).toBe(201);
    const other = await send(sender, { refId, to: recipient.email, amount: 101 });
    expect(other.status).toBe(422);
    expect(other.json).toMatchObject({ code: "idempotency_key_reused", fields: ["amount"] });
    expect(await balanceOf(sender.id)).toBe(900);
    expect(await balanceOf(recipient.id)).toBe(100);
  });

  it("an unknown address is 422 recipient_unknown, not stored; after 5 of them even a known address is 429", async () => {
    const { sender, recipient } = await senderAndRecipient(1000);
    // Before the budget is spent, a known address answers (a transfer made).
    expect((await send(sender, { refId: freshRefId("known"), to: recipient.email, amount: 10 })).status).toBe(201);
    for (let i = 0; i < RECIPIENT_MISS_RULE.points; i++) {
      const refId = freshRefId("miss");
      const missed = await send(sender, { refId, to: `nobody-${refId}@example.test`, amount: 10 });
      expect(missed.status, `miss ${i + 1}`).toBe(422);
      expect(missed.json.code).toBe("recipient_unknown");
      expect(missed.headers.get("idempotent-replayed")).toBeNull();
      expect(await countRows(sender.id, "transfer", refId)).toBe(0);
    }
    const refId = freshRefId("known");
    const throttled = await send(sender, { refId, to: recipient.email, amount: 10 });
    expect(throttled.status).toBe(429);
    expect(throttled.json.code).toBe("rate_limited");
    expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await countRows(sender.id, "transfer", refId)).toBe(0);
    // An unknown address now gets the same 429: the answers no longer tell the two apart.
    const unknown = await send(sender, { refId: freshRefId("miss"), to: "still-nobody@example.test", amount: 10 });
    expect(unknown.status).toBe(429);
    expect(await balanceOf(sender.id)).toBe(990);
    expect(await balanceOf(recipient.id)).toBe(10);

    // Negative control: the same known address from a sender who has not spent the budget answers 201, so the 429
    // above was the throttle and not the address.
    const fresh = await createApiUser();
    await seedBalance(fresh.id, 100);
    const control = await send(fresh, { refId, to: recipient.email, amount: 10 });
    expect(control.status).toBe(201);
    expect(await balanceOf(recipient.id)).toBe(20);
  });

  it("to yourself, in any case of the address: 422 transfer_to_self, nothing claimed", async () => {
    const { sender } = await senderAndRecipient(1000);
    for (const to of [sender.email, sender.email.toUpperCase()]) {
      const refId = freshRefId("self");
      const refused = await send(sender, { refId, to, amount: 10 });
      expect(refused.status, to).toBe(422);
      expect(refused.json.code).toBe("transfer_to_self");
      expect(await countRows(sender.id, "transfer", refId)).toBe(0);
    }
    expect(await balanceOf(sender.id)).toBe(1000);
  });

  it("402 insufficient_funds is stored and replayed as 402 even after the balance grows; nothing reaches the recipient", async () => {
    const { sender, recipient } = await senderAndRecipient(40);
    const body = { refId: freshRefId("tr"), to: recipient.email, amount: 50 };
    const first = await send(sender, body);
    expect(first.status).toBe(402);
    expect(first.headers.get("content-type")).toBe("application/problem+json");
    expect(first.json).toMatchObject({ code: "insufficient_funds", status: 402 });
    await seedBalance(sender.id, 100);
    const again = await send(sender, body);
    expect(again.status).toBe(402);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await balanceOf(sender.id)).toBe(140);
    expect(await balanceOf(recipient.id)).toBe(0);
    expect(await receivedRows(recipient.id)).toEqual([]);
  });

  it("a sender who owes a disputed top-up: 402 debt_outstanding, stored; nothing reaches the recipient", async () => {
    const [sender, recipient] = await Promise.all([createApiUser(), createApiUser()]);
    await testPool().query(
      "INSERT INTO wallets (user_id, balance_minor, debt_minor, currency) VALUES ($1, 0, 250, 'USD')",
      [sender.id],
    );
    const body = { refId: freshRefId("tr"), to: recipient.email, amount: 10 };
    const refused = await send(sender, body);
    expect(refused.status).toBe(402);
    expect(refused.json).toMatchObject({ code: "debt_outstanding" });
    const again = await send(sender, body);
    expect(again.text).toBe(refused.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await countRows(sender.id, "transfer", body.refId)).toBe(1);
    expect(await receivedRows(recipient.id)).toEqual([]);
  });
});
