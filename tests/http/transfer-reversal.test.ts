/**
 * An admin's reversal of a transfer over HTTP (contract section 15.1; docs/decisions/063):
 * `POST /api/v1/admin/transfers/{userId}/{refId}/reversal` against the built app, a real PostgreSQL and Redis. Admins
 * only (401 without credentials, 403 for a user, the body checked first); one reversal per transfer however often it
 * is asked, replayed byte for byte; another reason 422; a failed transfer 409, an unknown one 404; a recipient who
 * spent the money left with a debt. The page `/admin/transfers` sends a visitor to sign in and shows a user the 403
 * page.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createUser } from "../../lib/users/create-user";
import { postJsonFrom, requestFrom } from "../helpers/from-address";
import { api, createApiUser, type ApiUser } from "../helpers/http";
import { balanceOf, freshRefId, seedBalance } from "../helpers/ledger";
import { testPool } from "../helpers/db";
import { appUrl } from "../helpers/stack";

const PASSWORD = "correct horse battery staple";
/** Every request here comes from this loopback address; the throttles are not under test. */
const FROM = "127.0.0.6";

function reversalPath(sender: ApiUser, refId: string) {
  return `/api/v1/admin/transfers/${encodeURIComponent(sender.id)}/${encodeURIComponent(refId)}/reversal`;
}

/** A transfer of `amountMinor` from a sender holding `balanceMinor` to a new recipient; its ref id. */
async function transferred(balanceMinor: number, amountMinor: number) {
  const [sender, recipient] = await Promise.all([createApiUser(), createApiUser()]);
  await seedBalance(sender.id, balanceMinor);
  const refId = freshRefId("tr");
  const sent = await api("/api/v1/transfers", {
    token: sender.token,
    body: { refId, to: recipient.email, amount: amountMinor },
  });
  return { sender, recipient, refId, sent };
}

async function debtOf(userId: string): Promise<number> {
  const result = await testPool().query<{ d: number }>("SELECT debt_minor::int AS d FROM wallets WHERE user_id = $1", [
    userId,
  ]);
  return result.rows[0]?.d ?? 0;
}

describe("POST /api/v1/admin/transfers/{userId}/{refId}/reversal", () => {
  it("401 without credentials, 403 for a user (even the sender), 400 for a bad body before either", async () => {
    const { sender, refId } = await transferred(1000, 300);
    const body = { reason: "Sent by mistake" };
    expect((await api(reversalPath(sender, refId), { body })).status).toBe(401);
    const refused = await api(reversalPath(sender, refId), { token: sender.token, body });
    expect(refused.status).toBe(403);
    expect(refused.json.code).toBe("forbidden");
    expect((await api(reversalPath(sender, refId), { body: { reason: "" } })).status).toBe(400);
    expect((await api(reversalPath(sender, refId), { body: { reason: "x", extra: 1 } })).status).toBe(400);
    expect(await balanceOf(sender.id)).toBe(700);
  });

  it("201 once: the sender credited, the recipient debited; replays byte for byte, another reason 422", async () => {
    const admin = await createApiUser("admin");
    const { sender, recipient, refId, sent } = await transferred(1000, 300);
    expect(sent.status).toBe(201);
    const body = { reason: "Sent by mistake" };
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => api(reversalPath(sender, refId), { token: admin.token, body })),
    );
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get("idempotent-replayed") === null)).toHaveLength(1);
    expect(answers[0]!.json.reversal).toMatchObject({
      transferRefId: refId,
      to: recipient.email,
      amount: 300,
      currency: "USD",
      reason: "Sent by mistake",
      status: "succeeded",
    });
    expect(await balanceOf(sender.id)).toBe(1000);
    expect(await balanceOf(recipient.id)).toBe(0);
    const other = await api(reversalPath(sender, refId), { token: admin.token, body: { reason: "Another reason" } });
    expect(other.status).toBe(422);
    expect(other.json).toMatchObject({ code: "idempotency_key_reused", fields: ["reason"] });
    expect(await balanceOf(sender.id)).toBe(1000);
  });

  it("takes the money back from a recipient who spent it: a debt", async () => {
    const admin = await createApiUser("admin");
    const third = await createApiUser();
    const { sender, recipient, refId } = await transferred(1000, 500);
    const spent = await api("/api/v1/transfers", {
      token: recipient.token,
      body: { refId: freshRefId("tr"), to: third.email, amount: 400 },
    });
    expect(spent.status).toBe(201);
    const reversed = await api(reversalPath(sender, refId), { token: admin.token, body: { reason: "Fraud" } });
    expect(reversed.status).toBe(201);
    expect(await balanceOf(recipient.id)).toBe(0);
    expect(await debtOf(recipient.id)).toBe(400);
    expect(await balanceOf(sender.id)).toBe(1000);
    const wallet = await api("/api/v1/wallet", { token: recipient.token });
    expect(wallet.json).toMatchObject({ balance: 0, debt: 400 });
  });

  it("409 transfer_not_reversible for a failed transfer, 404 for an unknown one and for a received one", async () => {
    const admin = await createApiUser("admin");
    const { sender, recipient, refId, sent } = await transferred(100, 500);
    expect(sent.status).toBe(402);
    const body = { reason: "Try" };
    const failed = await api(reversalPath(sender, refId), { token: admin.token, body });
    expect(failed.status).toBe(409);
    expect(failed.json.code).toBe("transfer_not_reversible");
    const unknown = await api(reversalPath(sender, freshRefId("none")), { token: admin.token, body });
    expect(unknown.status).toBe(404);
    const received = await api(reversalPath(recipient, `transfer:1`), { token: admin.token, body });
    expect(received.status).toBe(404);
  });
});

describe("the Transfers page", () => {
  it("sends a visitor to sign in, shows a user the 403 page and an admin the newest transfers", async () => {
    const cookies: string[] = [];
    for (const role of ["user", "admin"] as const) {
      const email = `transfers-${randomUUID()}@example.test`;
      const created = await createUser({ email, password: PASSWORD, role });
      if (created.kind !== "created") throw new Error("the account could not be created");
      const signIn = await postJsonFrom(FROM, `${appUrl()}/api/auth/sign-in/email`, { email, password: PASSWORD });
      expect(signIn.status).toBe(200);
      cookies.push(String(signIn.headers["set-cookie"]?.[0]).split(";")[0]!);
    }
    const page = (cookie?: string) =>
      requestFrom(FROM, `${appUrl()}/admin/transfers`, { headers: cookie ? { cookie } : {} });
    const visitor = await page();
    expect([303, 307]).toContain(visitor.status);
    expect(String(visitor.headers.location)).toContain("/sign-in");
    expect((await page(cookies[0])).status).toBe(403);
    await transferred(1000, 100);
    const shown = await page(cookies[1]);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('data-testid="admin-transfers"');
    expect(shown.text).toContain('data-testid="reverse-form"');
  });
});
