/**
 * Cases C31, C32 and C33 (a) against the built app over real HTTP: the pages' server actions posted the way a browser
 * without JavaScript posts them (tests/helpers/from-address.ts), the API with tokens, rows read back from PostgreSQL.
 *
 * - C31: text that is not money and holds `\u0000` (which PostgreSQL refuses in text) gets the page's sentence or a
 *   400, never a 500: the tokens page's name, the admin refund form's hidden fields, the admin timeline's user id,
 *   better-auth's sign-up endpoint.
 * - C32: `.` and `..` are refused as new references at every door (decision 049); `...` is an ordinary reference
 *   that is created, read, shown and refunded.
 * - C33 (a): a server action with `Sec-Fetch-Site: same-origin` and an `Origin` that is not the page's is the 403
 *   page (Next.js answered it with a 500), and a cookie POST to the API with that pair is a 403 too.
 *
 * Each test has a control beside it (the same door with a well-formed value works), so each refusal is the rule's.
 * Negative controls: the guards removed, these tests fail (500s, a created token, a 201 for `..`); how they were
 * run is in docs/cases.md's rows and the unit and integration tests that name the same cases.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createUser } from "../../lib/users/create-user";
import { testPool } from "../helpers/db";
import { postJsonFrom, requestFrom, submitPageFormFrom } from "../helpers/from-address";
import { api, type ApiUser, createApiUser, waitForTopupStatus } from "../helpers/http";
import { freshRefId } from "../helpers/ledger";
import { appUrl } from "../helpers/stack";

const PASSWORD = "correct horse battery staple";
/** Every request here comes from this loopback address; the throttles are not under test. */
const FROM = "127.0.0.3";

/** An account with a password, signed in: its id and its session cookie (`name=value`). */
async function signedIn(role: "user" | "admin"): Promise<{ userId: string; cookie: string }> {
  const email = `hostile-${randomUUID()}@example.test`;
  const created = await createUser({ email, password: PASSWORD, role });
  if (created.kind !== "created") throw new Error("the account could not be created");
  const signIn = await postJsonFrom(FROM, `${appUrl()}/api/auth/sign-in/email`, { email, password: PASSWORD });
  expect(signIn.status).toBe(200);
  const cookie = String(signIn.headers["set-cookie"]?.[0]).split(";")[0]!;
  expect(cookie).toContain("session_token=");
  return { userId: created.userId, cookie };
}

/** A top-up of `amount` that the sandbox bank charged and the wallet credited. */
async function succeededTopup(owner: ApiUser, refId: string, amount = 1000): Promise<void> {
  const created = await api("/api/v1/topups", { token: owner.token, body: { refId, amount } });
  expect(created.status).toBe(201);
  expect((await waitForTopupStatus(owner.token, refId)).status).toBe("succeeded");
}

/** The refund entries of `userId` (every refund of the owner's top-ups). */
async function refundsOf(userId: string): Promise<string[]> {
  const rows = await testPool().query<{ ref_id: string }>(
    `SELECT ref_id FROM ledger_entries WHERE user_id = $1 AND type = 'refund' ORDER BY id`,
    [userId],
  );
  return rows.rows.map((row) => row.ref_id);
}

const timelinePath = (userId: string, refId: string) =>
  `/admin/topups/${encodeURIComponent(userId)}/${encodeURIComponent(refId)}`;
const refundsPath = (userId: string, refId: string) => `/api/v1${timelinePath(userId, refId)}/refunds`;

/**
 * Posts the admin timeline page's refund form with `fields` (all four: the hidden ones and the amount) and
 * `step: "confirm"`, as its "Confirm refund" button sends them (decision 056: the first step only reviews).
 */
function postRefundForm(cookie: string, pagePath: string, fields: Record<string, string>) {
  return submitPageFormFrom(
    FROM,
    `${appUrl()}${pagePath}`,
    { ...fields, step: "confirm" },
    { cookie },
    { containing: 'name="refundId"' },
  );
}

/** What the refund form says for a 400 (lib/web/outcome-sentences.ts), as React writes it in the page. */
const OUT_OF_DATE = "This form is out of date. Reload the page and try again";

describe("C31: NUL in fields that are not money", () => {
  it("C31: the tokens page refuses a token named a\\u0000b with its sentence (200), never a 500; a plain name works", async () => {
    const user = await signedIn("user");
    const post = (name: string) =>
      submitPageFormFrom(
        FROM,
        `${appUrl()}/settings/tokens`,
        { name, expiry: "never" },
        { cookie: user.cookie },
        { containing: 'name="name"' },
      );
    const refused = await post("a\u0000b");
    expect(refused.status).toBe(200);
    expect(refused.text).toContain(
      "Give the token a name of 1 to 100 characters, without line breaks or other control characters.",
    );
    const count = async () =>
      (await testPool().query("SELECT 1 FROM api_tokens WHERE user_id = $1", [user.userId])).rowCount;
    expect(await count()).toBe(0);
    // Control: the same form with a plain name makes the token.
    const made = await post("a b");
    expect(made.status).toBe(200);
    expect(made.text).toContain("created. Copy it now");
    expect(await count()).toBe(1);
  });

  it("C31: the admin refund form with \\u0000 in any field answers its sentence, never a 500; nothing is refunded", async () => {
    const admin = await signedIn("admin");
    const owner = await createApiUser();
    const refId = freshRefId("c31");
    await succeededTopup(owner, refId);
    const page = timelinePath(owner.id, refId);
    const good = { userId: owner.id, topupRefId: refId, refundId: freshRefId("c31-refund"), amount: "1.00" };
    for (const field of ["userId", "topupRefId", "refundId", "amount"] as const) {
      for (const value of ["\u0000", `${good[field]}\u0000`]) {
        const response = await postRefundForm(admin.cookie, page, { ...good, [field]: value });
        expect(response.status, `${field}=${JSON.stringify(value)}`).toBe(200);
        expect(response.text).toContain(OUT_OF_DATE);
      }
    }
    expect(await refundsOf(owner.id)).toEqual([]);
    // Control: the same form, every field as the page wrote it, refunds.
    const done = await postRefundForm(admin.cookie, page, good);
    expect(done.status).toBe(200);
    expect(done.text).not.toContain(OUT_OF_DATE);
    expect(await refundsOf(owner.id)).toEqual([good.refundId]);
  });

  it("C31: the admin timeline of user id \\u0000 says 'Top-up not found', never a 500", async () => {
    const admin = await signedIn("admin");
    for (const path of ["/admin/topups/%00/r-1", "/admin/topups/u%00x/r-1"]) {
      const response = await requestFrom(FROM, `${appUrl()}${path}`, { headers: { cookie: admin.cookie } });
      expect(response.status, path).toBe(200);
      expect(response.text).toContain("Top-up not found");
    }
  });

  it("C31: better-auth's sign-up endpoint refuses a name or picture address holding \\u0000 with 400", async () => {
    const url = `${appUrl()}/api/auth/sign-up/email`;
    const base = { email: `c31-${randomUUID()}@example.test`, password: PASSWORD };
    const name = await postJsonFrom(FROM, url, { ...base, name: "a\u0000b" });
    expect(name.status).toBe(400);
    expect(name.json.code).toBe("INVALID_NAME");
    const image = await postJsonFrom(FROM, url, { ...base, name: "Ann", image: "https://x.example/\u0000" });
    expect(image.status).toBe(400);
    expect(image.json.code).toBe("INVALID_IMAGE");
    expect((await testPool().query(`SELECT 1 FROM "user" WHERE email = $1`, [base.email])).rowCount).toBe(0);
  });
});

describe("C32: dot segments as references", () => {
  it('C32: "." and ".." are refused with 400 at creation by every door, and nothing is written', async () => {
    const owner = await createApiUser();
    const admin = await createApiUser("admin");
    const adminPage = await signedIn("admin");
    const refId = freshRefId("c32");
    await succeededTopup(owner, refId);
    for (const ref of [".", ".."]) {
      const detail = 'must not be "." or ".." (URL paths drop these segments; docs/decisions/049)';
      const topup = await api("/api/v1/topups", { token: owner.token, body: { refId: ref, amount: 100 } });
      expect(topup.status).toBe(400);
      expect(topup.json).toMatchObject({ code: "invalid_request", detail: `refId: ${detail}` });
      const payment = await api("/api/v1/payments", { token: owner.token, body: { orderId: ref, amount: 1 } });
      expect(payment.status).toBe(400);
      expect(payment.json).toMatchObject({ code: "invalid_request", detail: `orderId: ${detail}` });
      const refund = await api(refundsPath(owner.id, refId), {
        token: admin.token,
        body: { refundId: ref, amount: 1 },
      });
      expect(refund.status).toBe(400);
      expect(refund.json).toMatchObject({ code: "invalid_request", detail: `refundId: ${detail}` });
      const form = await postRefundForm(adminPage.cookie, timelinePath(owner.id, refId), {
        userId: owner.id,
        topupRefId: refId,
        refundId: ref,
        amount: "0.01",
      });
      expect(form.status).toBe(200);
      expect(form.text).toContain(OUT_OF_DATE);
    }
    const dots = await testPool().query(`SELECT 1 FROM ledger_entries WHERE user_id = $1 AND ref_id IN ('.', '..')`, [
      owner.id,
    ]);
    expect(dots.rowCount).toBe(0);
  });

  it("C32: a refId of three dots is an ordinary reference: created, read back, shown on its admin page and refunded", async () => {
    const owner = await createApiUser();
    const admin = await createApiUser("admin");
    const adminPage = await signedIn("admin");
    await succeededTopup(owner, "...");
    const read = await api("/api/v1/topups/...", { token: owner.token });
    expect(read.status).toBe(200);
    expect(read.json.topup).toMatchObject({ refId: "...", status: "succeeded" });
    const page = await requestFrom(FROM, `${appUrl()}${timelinePath(owner.id, "...")}`, {
      headers: { cookie: adminPage.cookie },
    });
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-testid="timeline-topup"');
    const refund = await api(refundsPath(owner.id, "..."), {
      token: admin.token,
      body: { refundId: "...", amount: 1 },
    });
    expect(refund.status).toBe(201);
    expect(refund.json.refund).toMatchObject({ refundId: "...", topupRefId: "..." });
    const form = await postRefundForm(adminPage.cookie, timelinePath(owner.id, "..."), {
      userId: owner.id,
      topupRefId: "...",
      refundId: "....",
      amount: "0.02",
    });
    expect(form.status).toBe(200);
    expect(form.text).not.toContain(OUT_OF_DATE);
    expect(await refundsOf(owner.id)).toEqual(["...", "...."]);
    // A reward's ref id is `<adId>:<day>`: an ad id of two dots names no dot segment, and is credited.
    const reward = await api("/api/v1/rewards", { token: owner.token, body: { adId: ".." } });
    expect(reward.status).toBe(201);
  });
});

describe("C33: header pairs browsers never send", () => {
  const ownOrigin = () => new URL(appUrl()).origin;

  it("C33: a server action with Sec-Fetch-Site: same-origin and a foreign Origin is the 403 page, never a 500", async () => {
    const post = (headers: Record<string, string>) =>
      submitPageFormFrom(FROM, `${appUrl()}/sign-in`, { email: "x@example.test", password: "wrong password" }, headers);
    const port = new URL(appUrl()).port;
    // A foreign origin, and one of the app's own names that is not the host this request was sent to.
    for (const origin of ["https://evil.example", `http://localhost:${port}`]) {
      const response = await post({ origin, "sec-fetch-site": "same-origin" });
      expect(response.status, origin).toBe(403);
      expect(response.headers["content-type"]).toContain("text/html");
    }
    // Control: the page's own origin with the same header runs the action (a wrong password, said on the page).
    const own = await post({ origin: ownOrigin(), "sec-fetch-site": "same-origin" });
    expect(own.status).toBe(200);
    expect(own.text).toContain("Wrong email or password");
  });

  it("C33: a cookie POST to the API with Sec-Fetch-Site: same-origin beside a foreign Origin is refused with 403", async () => {
    const admin = await signedIn("admin");
    const reconcile = (origin: string) =>
      requestFrom(FROM, `${appUrl()}/api/v1/admin/reconcile`, {
        method: "POST",
        headers: { cookie: admin.cookie, origin, "sec-fetch-site": "same-origin" },
      });
    const refused = await reconcile("https://evil.example");
    expect(refused.status).toBe(403);
    expect(refused.json.code).toBe("forbidden");
    expect((await reconcile(ownOrigin())).status).toBe(200);
  });
});
