/**
 * `GET /api/v1/events` (docs/decisions/025-live-status-push.md) over HTTP against the built app: the signed-in
 * caller's stream says `ready`, then `change` for the caller's own top-ups only (never an amount); without
 * credentials it is 401 problem+json; an eleventh stream of one user is 429 with Retry-After.
 */
import { describe, expect, it } from "vitest";
import { api, createApiUser } from "../helpers/http";
import { freshRefId } from "../helpers/ledger";
import { appUrl } from "../helpers/stack";
import { waitFor } from "../helpers/wait";

/** An open stream: the frames read so far (`event` and parsed `data`), and its close. */
interface OpenStream {
  readonly status: number;
  readonly headers: Headers;
  readonly frames: { event: string; data: unknown }[];
  /** The raw text read so far. */
  readonly raw: () => string;
  readonly close: () => void;
}

async function openStream(token: string | null): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await fetch(`${appUrl()}/api/v1/events`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    signal: controller.signal,
  });
  const frames: { event: string; data: unknown }[] = [];
  let raw = "";
  if (response.status === 200 && response.body) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    void (async () => {
      let buffer = "";
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          raw += value;
          buffer += value;
          let end = buffer.indexOf("\n\n");
          while (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (event) frames.push({ event, data: data === undefined ? undefined : JSON.parse(data) });
            end = buffer.indexOf("\n\n");
          }
        }
      } catch {
        // Aborted by close().
      }
    })();
  }
  return {
    status: response.status,
    headers: response.headers,
    frames,
    raw: () => raw,
    close: () => controller.abort(),
  };
}

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  await waitFor(check, (ok) => ok, { what, timeoutMs, intervalMs: 25 });
}

describe("GET /api/v1/events", () => {
  it("streams ready, then the caller's own top-up changes (state, never the amount), and nothing of others", async () => {
    const [user, other] = [await createApiUser(), await createApiUser()];
    const stream = await openStream(user.token);
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      expect(stream.headers.get("cache-control")).toBe("no-cache, no-transform");
      await until(() => stream.frames.some((frame) => frame.event === "ready"), "ready");
      expect(stream.raw().startsWith("retry: 3000\n\n")).toBe(true);

      const othersRef = freshRefId("others");
      expect(
        (await api("/api/v1/topups", { token: other.token, body: { refId: othersRef, amount: 700 } })).status,
      ).toBe(201);
      const refId = freshRefId("live");
      expect((await api("/api/v1/topups", { token: user.token, body: { refId, amount: 1500 } })).status).toBe(201);
      const changes = () => stream.frames.filter((frame) => frame.event === "change");
      // The sandbox bank answers this top-up by webhook: it reaches succeeded.
      await until(
        () => changes().some((frame) => (frame.data as { status: string }).status === "succeeded"),
        "succeeded announced",
      );
      const mine = changes().map((frame) => frame.data as Record<string, unknown>);
      expect(new Set(mine.map((data) => data.refId))).toEqual(new Set([refId]));
      // The first state committed: the claim and its admission are one insert (docs/decisions/045).
      expect(mine[0]).toEqual({ type: "topup", refId, status: "processing" });
      for (const data of mine) expect(Object.keys(data).sort()).toEqual(["refId", "status", "type"]);
      expect(stream.raw()).not.toContain(othersRef);
    } finally {
      stream.close();
    }
  });

  it("is 401 problem+json without credentials", async () => {
    const result = await api("/api/v1/events");
    expect(result.status).toBe(401);
    expect(result.headers.get("content-type")).toBe("application/problem+json");
    expect(result.json.code).toBe("unauthenticated");
  });

  it("refuses an eleventh stream of one user with 429 and Retry-After, and serves another user meanwhile", async () => {
    const [user, other] = [await createApiUser(), await createApiUser()];
    const streams: OpenStream[] = [];
    try {
      for (let i = 0; i < 10; i++) {
        const stream = await openStream(user.token);
        streams.push(stream);
        expect(stream.status, `stream ${i + 1}`).toBe(200);
      }
      const eleventh = await api("/api/v1/events", { token: user.token });
      expect(eleventh.status).toBe(429);
      expect(eleventh.json.code).toBe("rate_limited");
      expect(Number(eleventh.headers.get("retry-after"))).toBeGreaterThan(0);
      const others = await openStream(other.token);
      streams.push(others);
      expect(others.status).toBe(200);
    } finally {
      for (const stream of streams) stream.close();
    }
  });
});
