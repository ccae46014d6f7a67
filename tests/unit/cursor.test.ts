/**
 * Page cursors (lib/pagination/cursor.ts): opaque, bound to their list and scope, strict about
 * what they accept, and the page cut that makes `nextCursor` null exactly on the last page.
 */
import { describe, expect, it } from "vitest";
import {
  boundedLimit,
  CURSOR_PATTERN,
  decodeCursor,
  encodeCursor,
  keysetAfter,
  keysetAfterMicros,
  pageOf,
} from "../../lib/pagination/cursor";

const position = { createdAt: new Date("2026-11-30T10:11:12.345Z"), id: 4242 };

describe("cursors", () => {
  it("round-trip the position exactly and look like base64url", () => {
    const cursor = encodeCursor("topups", "user:u1|status:*", position);
    expect(cursor).toMatch(CURSOR_PATTERN);
    expect(cursor.length).toBeLessThan(160);
    expect(decodeCursor(cursor, "topups", "user:u1|status:*")).toEqual({ ok: true, position });
    expect(keysetAfter(cursor, "topups", "user:u1|status:*")).toEqual({
      ok: true,
      params: [position.createdAt, position.id],
    });
    expect(keysetAfter(undefined, "topups", "user:u1|status:*")).toEqual({ ok: true, params: [null, null] });
  });

  it("carry a microsecond column's position whole (the books' postings), and read one without microseconds as .000", () => {
    const scope = "account:bank_clearing";
    const precise = { ...position, subMillisecondUs: 7 };
    const cursor = encodeCursor("admin-account-postings", scope, precise);
    expect(decodeCursor(cursor, "admin-account-postings", scope)).toEqual({ ok: true, position: precise });
    expect(keysetAfterMicros(cursor, "admin-account-postings", scope)).toEqual({
      ok: true,
      params: ["2026-11-30T10:11:12.345007Z", 4242],
    });
    const plain = encodeCursor("admin-account-postings", scope, position);
    expect(keysetAfterMicros(plain, "admin-account-postings", scope)).toEqual({
      ok: true,
      params: ["2026-11-30T10:11:12.345000Z", 4242],
    });
    expect(keysetAfterMicros(undefined, "admin-account-postings", scope)).toEqual({ ok: true, params: [null, null] });
    expect(keysetAfterMicros(cursor, "admin-account-postings", "account:merchants_payable")).toMatchObject({
      ok: false,
    });
  });

  it("refuse a cursor of another list, another user or other filters as foreign", () => {
    const cursor = encodeCursor("topups", "user:u1|status:*", position);
    for (const [list, scope] of [
      ["entries", "user:u1|status:*"],
      ["topups", "user:u2|status:*"],
      ["topups", "user:u1|status:failed"],
      ["admin-topups", "user:u1|status:*"],
    ] as const) {
      const decoded = decodeCursor(cursor, list, scope);
      expect(decoded.ok).toBe(false);
      expect(!decoded.ok && decoded.detail).toMatch(/foreign/);
    }
  });

  it("refuse malformed text", () => {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const good = { v: 1, l: "entries", s: "x", t: 1, i: 1 };
    const malformed = [
      "",
      "!!!!",
      "a b",
      "a".repeat(257),
      Buffer.from("not json").toString("base64url"),
      encode([1, "entries"]),
      encode({ ...good, v: 2 }),
      encode({ ...good, t: -1 }),
      encode({ ...good, t: 1.5 }),
      encode({ ...good, i: 0 }),
      encode({ ...good, i: "1" }),
      encode({ ...good, extra: true }),
      `${encodeCursor("entries", "user:u1", position)}=`,
    ];
    for (const cursor of malformed) {
      const decoded = decodeCursor(cursor, "entries", "user:u1");
      expect(decoded, cursor).toEqual({ ok: false, detail: expect.stringMatching(/malformed/) });
    }
  });

  it("pageOf: limit + 1 rows give a next cursor at the last shown row; limit rows or fewer give null", () => {
    const rows = [5, 4, 3, 2].map((id) => ({ id, createdAt: new Date(1000 * id) }));
    const page = pageOf(
      rows,
      3,
      "entries",
      "user:u1",
      (row) => row,
      (row) => row.id,
    );
    expect(page.items).toEqual([5, 4, 3]);
    expect(decodeCursor(page.nextCursor!, "entries", "user:u1")).toEqual({
      ok: true,
      position: { id: 3, createdAt: new Date(3000) },
    });
    expect(
      pageOf(
        rows.slice(0, 3),
        3,
        "entries",
        "user:u1",
        (row) => row,
        (row) => row.id,
      ).nextCursor,
    ).toBeNull();
    expect(
      pageOf(
        [],
        3,
        "entries",
        "user:u1",
        (row: { id: number; createdAt: Date }) => row,
        (row) => row,
      ),
    ).toEqual({
      items: [],
      nextCursor: null,
    });
  });

  it("boundedLimit: default 50, 1..100", () => {
    expect(boundedLimit(undefined)).toBe(50);
    expect(boundedLimit(0)).toBe(1);
    expect(boundedLimit(7)).toBe(7);
    expect(boundedLimit(1000)).toBe(100);
  });
});
