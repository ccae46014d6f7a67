/**
 * What people see of the books over HTTP (contract section 13.4): `GET /api/v1/wallet?at=`, `GET /api/v1/statement`
 * and `GET /api/v1/statement.csv` against the stack's built app: their statuses, their validation (400
 * invalid_request), their authentication (401 without credentials) and that a caller only ever sees their own
 * postings. Every response is also checked against the served OpenAPI document (tests/setup/openapi-fetch.ts).
 */
import { parse } from "csv-parse/sync";
import { beforeAll, describe, expect, it } from "vitest";
import { api, createApiUser, waitForTopupStatus, type ApiUser } from "../helpers/http";
import { freshRefId } from "../helpers/ledger";
import { appUrl } from "../helpers/stack";

const DAY_MS = 86_400_000;
const day = (offset: number) => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);
const RANGE = `from=${day(-1)}&to=${day(1)}`;

let owner: ApiUser;
let stranger: ApiUser;

beforeAll(async () => {
  owner = await createApiUser();
  stranger = await createApiUser();
  const refId = freshRefId("stmt");
  expect((await api("/api/v1/topups", { token: owner.token, body: { refId, amount: 2500 } })).status).toBe(201);
  expect((await waitForTopupStatus(owner.token, refId)).status).toBe("succeeded");
  const payment = await api("/api/v1/payments", {
    token: owner.token,
    body: { orderId: freshRefId("order"), amount: 500, payee: '=HYPERLINK("x"), Inc.' },
  });
  expect(payment.status, payment.text).toBe(201);
}, 60_000);

describe("GET /api/v1/wallet?at=", () => {
  it("without at the body is as it always was; with at it adds the instant and the balance then", async () => {
    const now = await api("/api/v1/wallet", { token: owner.token });
    expect(now.status).toBe(200);
    expect(now.text).toBe('{"balance":2000,"currency":"USD"}');
    const at = new Date().toISOString();
    const then = await api(`/api/v1/wallet?at=${encodeURIComponent(at)}`, { token: owner.token });
    expect(then.status).toBe(200);
    expect(then.json).toEqual({ balance: 2000, currency: "USD", at });
    const before = await api("/api/v1/wallet?at=2020-01-01T00:00:00Z", { token: owner.token });
    expect(before.json).toEqual({ balance: 0, currency: "USD", at: "2020-01-01T00:00:00Z" });
  });

  it("refuses a malformed, over-precise, far-future or pre-1970 instant with 400 invalid_request", async () => {
    const farFuture = new Date(Date.now() + DAY_MS).toISOString();
    for (const at of [
      "yesterday",
      "2026-13-01T00:00:00Z",
      "2026-12-01",
      "2026-12-01T00:00:00.1234567Z",
      farFuture,
      "1969-12-31T23:59:59Z",
      "",
    ]) {
      const answer = await api(`/api/v1/wallet?at=${encodeURIComponent(at)}`, { token: owner.token });
      expect([at, answer.status, answer.json?.code]).toEqual([at, 400, "invalid_request"]);
    }
  });

  it("asks for credentials (401) and shows another caller only their own balance", async () => {
    expect((await api(`/api/v1/wallet?at=${encodeURIComponent(new Date().toISOString())}`)).status).toBe(401);
    const theirs = await api(`/api/v1/wallet?at=${encodeURIComponent(new Date().toISOString())}`, {
      token: stranger.token,
    });
    expect(theirs.json).toMatchObject({ balance: 0 });
  });
});

describe("GET /api/v1/statement", () => {
  it("answers the caller's postings with running balances, paged by cursor", async () => {
    const first = await api(`/api/v1/statement?${RANGE}&limit=1`, { token: owner.token });
    expect(first.status, first.text).toBe(200);
    expect(first.json).toMatchObject({ openingBalance: 0, currency: "USD", from: day(-1), to: day(1) });
    expect(first.json.lines.map((l: { amount: number }) => l.amount)).toEqual([2500]);
    const second = await api(`/api/v1/statement?${RANGE}&limit=1&cursor=${first.json.nextCursor}`, {
      token: owner.token,
    });
    expect(second.json.lines).toMatchObject([
      { kind: "payment", amount: -500, balanceAfter: 2000, counterparty: '=HYPERLINK("x"), Inc.' },
    ]);
    expect(second.json.nextCursor).toBeNull();
  });

  it("refuses a bad range, limit or cursor with 400 invalid_request", async () => {
    const paths = [
      "/api/v1/statement",
      `/api/v1/statement?from=${day(0)}`,
      `/api/v1/statement?from=${day(1)}&to=${day(0)}`,
      `/api/v1/statement?from=${day(-366)}&to=${day(0)}`,
      `/api/v1/statement?${RANGE}&limit=0`,
      `/api/v1/statement?${RANGE}&cursor=not*a*cursor`,
      "/api/v1/statement?from=2026-02-30&to=2026-03-01",
    ];
    for (const path of paths) {
      const answer = await api(path, { token: owner.token });
      expect([path, answer.status, answer.json?.code]).toEqual([path, 400, "invalid_request"]);
    }
    expect((await api(`/api/v1/statement?from=${day(-365)}&to=${day(0)}`, { token: owner.token })).status).toBe(200);
  });

  it("never shows another user's postings: their own statement is empty and the owner's cursor is foreign", async () => {
    const page = await api(`/api/v1/statement?${RANGE}&limit=1`, { token: owner.token });
    const theirs = await api(`/api/v1/statement?${RANGE}`, { token: stranger.token });
    expect(theirs.json).toMatchObject({ lines: [], openingBalance: 0, nextCursor: null });
    const borrowed = await api(`/api/v1/statement?${RANGE}&limit=1&cursor=${page.json.nextCursor}`, {
      token: stranger.token,
    });
    expect(borrowed.status).toBe(400);
    expect(borrowed.json.detail).toContain("foreign");
    expect((await api(`/api/v1/statement?${RANGE}`)).status).toBe(401);
    expect((await api(`/api/v1/statement?${RANGE}`, { method: "POST", token: owner.token })).status).toBe(405);
  });
});

describe("GET /api/v1/statement.csv", () => {
  it("is an attachment of RFC 4180 CSV with a byte order mark, the payee neutralised", async () => {
    const response = await fetch(`${appUrl()}/api/v1/statement.csv?${RANGE}`, {
      headers: { authorization: `Bearer ${owner.token}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/csv; charset=utf-8; header=present");
    expect(response.headers.get("content-disposition")).toBe(
      `attachment; filename="statement-${day(-1)}-to-${day(1)}.csv"`,
    );
    const text = Buffer.from(await response.arrayBuffer()).toString("utf8");
    expect(text.startsWith("\uFEFF")).toBe(true);
    const records = parse(text, { bom: true }) as string[][];
    expect(records.map((r) => [r[3], r[4], r[6], r[7]])).toEqual([
      ["Counterparty", "Payee", "Amount", "Balance after"],
      ["Bank", "", "25.00", "25.00"],
      [`'=HYPERLINK("x"), Inc.`, `'=HYPERLINK("x"), Inc.`, "-5.00", "20.00"],
    ]);
  });

  it("refuses a bad range (400), asks for credentials (401) and shows another caller only the header", async () => {
    const tooLong = await api(`/api/v1/statement.csv?from=${day(-400)}&to=${day(0)}`, { token: owner.token });
    expect([tooLong.status, tooLong.json?.code]).toEqual([400, "invalid_request"]);
    expect((await api("/api/v1/statement.csv", { token: owner.token })).status).toBe(400);
    expect((await api(`/api/v1/statement.csv?${RANGE}`)).status).toBe(401);
    const theirs = await api(`/api/v1/statement.csv?${RANGE}`, { token: stranger.token });
    expect(theirs.status).toBe(200);
    expect(parse(theirs.text, { bom: true })).toHaveLength(1);
  });
});
