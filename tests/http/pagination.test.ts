/**
 * Cursor pages (contract section 4) on `GET /api/v1/topups`, `/entries` and `/admin/topups`:
 * `?limit=&cursor=` answers the items and `nextCursor` (null on the last page), newest first by (created_at, id);
 * rows added between pages are neither repeated nor do they push a row off the pages (an offset would do both);
 * a malformed or foreign cursor is 400 invalid_request.
 */
import { describe, expect, it } from "vitest";
import { api, createApiUser, waitForTopupStatus, type ApiUser } from "../helpers/http";
import { freshRefId, seedBalance } from "../helpers/ledger";

/** Creates `count` top-ups one after the other (so their order is known) and returns their refIds, oldest first. */
async function topUps(user: ApiUser, count: number, prefix: string): Promise<string[]> {
  const refIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const refId = freshRefId(prefix);
    const created = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 100 + i } });
    expect(created.status).toBe(201);
    refIds.push(refId);
  }
  return refIds;
}

/** Follows `nextCursor` from `firstPath` until it is null; `between` runs after every page but the last. */
async function pages(
  user: ApiUser,
  firstPath: string,
  key: "topups" | "entries",
  between: () => Promise<unknown> = async () => {},
): Promise<string[][]> {
  const collected: string[][] = [];
  let path: string | null = firstPath;
  while (path !== null) {
    const result = await api(path, { token: user.token });
    expect(result.status, result.text).toBe(200);
    collected.push(result.json[key].map((item: { refId: string }) => item.refId));
    const next: string | null = result.json.nextCursor;
    expect(next === null || typeof next === "string").toBe(true);
    path = next === null ? null : `${firstPath}&cursor=${encodeURIComponent(next)}`;
    if (path !== null) await between();
    expect(collected.length).toBeLessThan(50);
  }
  return collected;
}

describe("GET /api/v1/topups by cursor", () => {
  it("7 top-ups paged by 3 give 3, 3, 1, newest first, no duplicate, nextCursor null at the end", async () => {
    const user = await createApiUser();
    const refIds = await topUps(user, 7, "page");
    const collected = await pages(user, "/api/v1/topups?limit=3", "topups");
    expect(collected.map((page) => page.length)).toEqual([3, 3, 1]);
    expect(collected.flat()).toEqual([...refIds].reverse());
  });

  it("with 5 top-ups inserted between the pages: still the same 3, 3, 1 of the first 7, none repeated or skipped", async () => {
    const user = await createApiUser();
    const refIds = await topUps(user, 7, "page-ins");
    const inserted: string[] = [];
    const collected = await pages(user, "/api/v1/topups?limit=3", "topups", async () => {
      inserted.push(...(await topUps(user, 5, "page-new")));
    });
    expect(collected.map((page) => page.length)).toEqual([3, 3, 1]);
    expect(collected.flat()).toEqual([...refIds].reverse());
    expect(inserted).toHaveLength(10);
    // The newer rows are on a fresh first page, newest first, before the original seven.
    const fresh = await api("/api/v1/topups?limit=100", { token: user.token });
    expect(fresh.json.topups.map((t: { refId: string }) => t.refId)).toEqual([...refIds, ...inserted].reverse());
    expect(fresh.json.nextCursor).toBeNull();
  });

  it("the status filter pages too, and its cursors only work with the same filter", async () => {
    const user = await createApiUser();
    await topUps(user, 3, "page-st");
    const declined = await topUps(user, 3, "sbx-decline-page");
    for (const refId of declined) expect((await waitForTopupStatus(user.token, refId)).status).toBe("failed");
    const first = await api("/api/v1/topups?status=failed&limit=2", { token: user.token });
    expect(first.json.topups.map((t: { refId: string }) => t.refId)).toEqual([declined[2], declined[1]]);
    const cursor = encodeURIComponent(first.json.nextCursor);
    const second = await api(`/api/v1/topups?status=failed&limit=2&cursor=${cursor}`, { token: user.token });
    expect(second.json).toMatchObject({ topups: [{ refId: declined[0] }], nextCursor: null });
    const otherFilter = await api(`/api/v1/topups?limit=2&cursor=${cursor}`, { token: user.token });
    expect(otherFilter.status).toBe(400);
    expect(otherFilter.json).toMatchObject({ code: "invalid_request" });
  });
});

describe("GET /api/v1/entries filters (decision 055)", () => {
  it("kind, status, search and UTC days on the server, paged within the filters; hostile filters are 400", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 1000);
    const pay = async (payee: string, note?: string) => {
      const orderId = freshRefId("filter");
      const body = { orderId, amount: 1, payee, ...(note === undefined ? {} : { note }) };
      expect((await api("/api/v1/payments", { token: user.token, body })).status).toBe(201);
      return orderId;
    };
    const coffee = [await pay("Corner Coffee", "beans"), await pay("Corner Coffee"), await pay("Corner Coffee")];
    const books = await pay("City Books", "Gift for Ana");
    const refused = freshRefId("filter");
    expect(
      (await api("/api/v1/payments", { token: user.token, body: { orderId: refused, amount: 999_999, payee: "X" } }))
        .status,
    ).toBe(402);
    const refsOf = async (query: string) => {
      const answer = await api(`/api/v1/entries?${query}`, { token: user.token });
      expect(answer.status, query).toBe(200);
      return answer.json.entries.map((line: { refId: string }) => line.refId);
    };
    expect(await refsOf("q=corner%20COFFEE")).toEqual([...coffee].reverse());
    expect(await refsOf("q=gift")).toEqual([books]);
    expect(await refsOf("type=payment&status=failed")).toEqual([refused]);
    expect(await refsOf("type=topup")).toEqual([]);
    const today = new Date().toISOString().slice(0, 10);
    expect(await refsOf(`from=${today}&to=${today}&q=books`)).toEqual([books]);
    expect(await refsOf("to=2000-01-01")).toEqual([]);
    const line = (await api(`/api/v1/entries?q=${books}`, { token: user.token })).json.entries[0];
    expect(line).toMatchObject({ payee: "City Books", note: "Gift for Ana", refId: books });
    expect(await refsOf(`q=${encodeURIComponent(line.reference.toLowerCase())}`)).toEqual([books]);
    // Pages keep the filters; a cursor of other filters is refused as foreign.
    const first = await api("/api/v1/entries?q=coffee&limit=2", { token: user.token });
    expect(first.json.entries.map((e: { refId: string }) => e.refId)).toEqual([coffee[2], coffee[1]]);
    const cursor = encodeURIComponent(first.json.nextCursor);
    expect(await refsOf(`q=coffee&limit=2&cursor=${cursor}`)).toEqual([coffee[0]]);
    expect((await api(`/api/v1/entries?q=books&cursor=${cursor}`, { token: user.token })).status).toBe(400);
    for (const hostile of [
      `q=${"x".repeat(129)}`,
      "q=",
      "q=%00",
      "q=a%0Ab",
      "q=%E2%80%AEevil",
      "type=withdrawal",
      "status=done",
      "from=2026-02-30",
      "from=tomorrow",
      "to=2026-12-01T00:00:00Z",
      "from=2026-12-02&to=2026-12-01",
      "from=99999-01-01",
    ]) {
      const answer = await api(`/api/v1/entries?${hostile}`, { token: user.token });
      expect(answer.status, hostile).toBe(400);
      expect(answer.json.code).toBe("invalid_request");
    }
  });
});

describe("GET /api/v1/entries by cursor", () => {
  it("default limit 50, max 100; pages of the statement with payments added between them", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 1000);
    const orderIds: string[] = [];
    for (let i = 0; i < 51; i++) {
      const orderId = freshRefId(`pay${i}`);
      expect((await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 1 } })).status).toBe(201);
      orderIds.push(orderId);
    }
    const byDefault = await api("/api/v1/entries", { token: user.token });
    expect(byDefault.json.entries).toHaveLength(50);
    expect(byDefault.json.nextCursor).toEqual(expect.any(String));
    const rest = await api(`/api/v1/entries?cursor=${encodeURIComponent(byDefault.json.nextCursor)}`, {
      token: user.token,
    });
    expect(rest.json.entries.map((e: { refId: string }) => e.refId)).toEqual([orderIds[0]]);
    expect(rest.json.nextCursor).toBeNull();
    const all = await api("/api/v1/entries?limit=100", { token: user.token });
    expect(all.json.entries).toHaveLength(51);
    expect(all.json.nextCursor).toBeNull();
    expect((await api("/api/v1/entries?limit=101", { token: user.token })).status).toBe(400);

    let n = 0;
    const collected = await pages(user, "/api/v1/entries?limit=20", "entries", async () => {
      const orderId = freshRefId(`late${n++}`);
      expect((await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 1 } })).status).toBe(201);
    });
    expect(collected.map((page) => page.length)).toEqual([20, 20, 11]);
    expect(collected.flat()).toEqual([...orderIds].reverse());
  });
});

describe("malformed and foreign cursors", () => {
  it("are 400 invalid_request on every list: garbage, another list's, another user's, other admin filters", async () => {
    const owner = await createApiUser();
    const other = await createApiUser();
    const admin = await createApiUser("admin");
    await topUps(owner, 2, "foreign");
    const topupsCursor = (await api("/api/v1/topups?limit=1", { token: owner.token })).json.nextCursor;
    const entriesCursor = (await api("/api/v1/entries?limit=1", { token: owner.token })).json.nextCursor;
    const adminCursor = (await api("/api/v1/admin/topups?limit=1", { token: admin.token })).json.nextCursor;
    for (const cursor of [topupsCursor, entriesCursor, adminCursor]) expect(cursor).toEqual(expect.any(String));

    const refused: Array<[string, string]> = [
      ["/api/v1/topups?cursor=not-a-cursor", owner.token],
      ["/api/v1/topups?cursor=%21%21", owner.token],
      [`/api/v1/topups?cursor=${"A".repeat(300)}`, owner.token],
      [`/api/v1/topups?cursor=${Buffer.from('{"v":1}').toString("base64url")}`, owner.token],
      [`/api/v1/topups?cursor=${entriesCursor}`, owner.token],
      [`/api/v1/entries?cursor=${topupsCursor}`, owner.token],
      [`/api/v1/topups?cursor=${topupsCursor}`, other.token],
      [`/api/v1/entries?cursor=${entriesCursor}`, other.token],
      [`/api/v1/admin/topups?cursor=${topupsCursor}`, admin.token],
      [`/api/v1/admin/topups?stuck=1&cursor=${adminCursor}`, admin.token],
      [`/api/v1/admin/topups?status=failed&cursor=${adminCursor}`, admin.token],
    ];
    for (const [path, token] of refused) {
      const result = await api(path, { token });
      expect(result.status, path).toBe(400);
      expect(result.json, path).toMatchObject({ code: "invalid_request", detail: expect.stringMatching(/^cursor: /) });
    }
    expect((await api(`/api/v1/topups?cursor=${topupsCursor}`, { token: owner.token })).status).toBe(200);
    expect((await api(`/api/v1/admin/topups?cursor=${adminCursor}`, { token: admin.token })).status).toBe(200);
  });
});

describe("GET /api/v1/admin/topups by cursor", () => {
  it("pages every user's top-ups newest first: ours appear once each, in order, with rows added between pages", async () => {
    const admin = await createApiUser("admin");
    const user = await createApiUser();
    const refIds = await topUps(user, 7, "adm-page");
    const seen = new Map<string, number>();
    const ours: string[] = [];
    let cursor: string | null = null;
    // Other test files add top-ups concurrently: they are newer than our cursor and never show up behind it. The
    // walk stops once it is past our oldest row (the list is newest first).
    for (let page = 0; page < 100; page++) {
      const path: string = `/api/v1/admin/topups?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const result = await api(path, { token: admin.token });
      expect(result.status).toBe(200);
      for (const row of result.json.topups as Array<{ userId: string; refId: string }>) {
        const key = `${row.userId}:${row.refId}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
        if (row.userId === user.id) ours.push(row.refId);
      }
      if (page === 0) await topUps(user, 5, "adm-new");
      cursor = result.json.nextCursor;
      if (cursor === null || ours.includes(refIds[0]!)) break;
    }
    expect(ours).toEqual([...refIds].reverse());
    expect([...seen.values()].every((count) => count === 1)).toBe(true);
  });
});

describe("GET /api/v1/admin/topups?user=<email>", () => {
  it("keeps one user's rows (the email in any case), pages them, and refuses another filter's cursor", async () => {
    const admin = await createApiUser("admin");
    const [user, other] = [await createApiUser(), await createApiUser()];
    const refIds = await topUps(user, 3, "adm-user");
    await topUps(other, 2, "adm-other");
    const email = encodeURIComponent(user.email.toUpperCase());
    const first = await api(`/api/v1/admin/topups?user=${email}&limit=2`, { token: admin.token });
    expect(first.status).toBe(200);
    const second = await api(
      `/api/v1/admin/topups?user=${email}&limit=2&cursor=${encodeURIComponent(first.json.nextCursor)}`,
      { token: admin.token },
    );
    expect(second.status).toBe(200);
    const rows = [...first.json.topups, ...second.json.topups] as Array<{
      userId: string;
      userEmail: string;
      refId: string;
    }>;
    expect(rows.map((row) => row.refId)).toEqual([...refIds].reverse());
    expect(new Set(rows.map((row) => row.userEmail))).toEqual(new Set([user.email]));
    expect(second.json.nextCursor).toBeNull();
    // Negative control: without the filter the other user's rows are there.
    const all = await api("/api/v1/admin/topups?limit=100", { token: admin.token });
    expect((all.json.topups as Array<{ userId: string }>).some((row) => row.userId === other.id)).toBe(true);

    const foreign = await api(
      `/api/v1/admin/topups?user=${encodeURIComponent(other.email)}&cursor=${encodeURIComponent(first.json.nextCursor)}`,
      { token: admin.token },
    );
    expect(foreign.status).toBe(400);
    expect((await api("/api/v1/admin/topups?user=not-an-email", { token: admin.token })).status).toBe(400);
    const stuck = await api(`/api/v1/admin/topups?stuck=1&user=${email}`, { token: admin.token });
    expect(stuck.status).toBe(200);
    expect(stuck.json.topups).toEqual([]);
  });
});
