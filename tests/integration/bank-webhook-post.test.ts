// The sandbox bank's webhook transport (bank/webhook-post.ts) against real local servers on 127.0.0.1: what one
// attempt reports for an answer, a long answer, an answer cut off mid-body, no answer in time, a refused
// connection and a cancel (the bank stopping). The engine records these as an attempt's status or error
// (docs/bank-sandbox.md, "Webhooks"); a wrong outcome here would turn a failed attempt into a delivered one.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AttemptCancel, WebhookPoster, WebhookTimeoutError } from "@/bank/webhook-post";
import { freePort } from "@/scripts/lib/ports";

/** Generous next to a local round trip, short enough for a test. */
const TIMEOUT_MS = 2000;
const EXCERPT_CHARS = 512;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.writeHead(204).end();
let server: Server;
let url = "";
const posters: WebhookPoster[] = [];

function poster(target = url): WebhookPoster {
  const created = new WebhookPoster(target, 2);
  posters.push(created);
  return created;
}

function post(target: WebhookPoster, cancel = new AttemptCancel()) {
  return target.post(
    '{"id":"evt_1"}',
    { "content-type": "application/json" },
    { timeoutMs: TIMEOUT_MS, cancel, excerptChars: EXCERPT_CHARS },
  );
}

beforeAll(async () => {
  server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/bank/webhook`;
});

afterEach(() => {
  for (const created of posters.splice(0)) created.close();
  handler = (_req, res) => res.writeHead(204).end();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("sandbox bank webhook transport", () => {
  it("sends the exact body with its headers and content-length, and reports the status and the answer", async () => {
    let received: { body: string; headers: IncomingMessage["headers"]; method?: string } | null = null;
    handler = (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        received = { body: Buffer.concat(chunks).toString("utf8"), headers: req.headers, method: req.method };
        res.writeHead(409, { "content-type": "application/json" }).end('{"error":"conflict"}');
      });
    };
    await expect(post(poster())).resolves.toEqual({ status: 409, body: '{"error":"conflict"}' });
    expect(received).toMatchObject({
      body: '{"id":"evt_1"}',
      method: "POST",
      headers: { "content-type": "application/json", "content-length": "14" },
    });
  });

  it("keeps the first 512 characters of a long answer (multi-byte characters intact) and reads it to the end", async () => {
    const long = "é".repeat(400) + "x".repeat(5000);
    handler = (_req, res) => res.writeHead(200).end(long);
    await expect(post(poster())).resolves.toEqual({ status: 200, body: long.slice(0, EXCERPT_CHARS) });
  });

  it("an answer cut off before its end is a network error (ECONNRESET), not a status", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-length": "1000" });
      res.write("partial");
      setTimeout(() => res.socket?.destroy(), 20);
    };
    await expect(post(poster())).rejects.toMatchObject({ code: "ECONNRESET" });
  });

  it("no answer within the budget rejects with a timeout naming the budget", async () => {
    handler = () => {
      // Never answers; the server's closeAllConnections in afterAll ends the socket.
    };
    const started = Date.now();
    const error = await post(poster()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WebhookTimeoutError);
    expect((error as Error).message).toBe(`timeout after ${TIMEOUT_MS} ms`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
  });

  it("a refused connection rejects with ECONNREFUSED", async () => {
    const closed = `http://127.0.0.1:${await freePort()}/api/v1/bank/webhook`;
    await expect(post(poster(closed))).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });

  it("cancel ends an attempt in flight at once, and an attempt cancelled before it starts is never sent", async () => {
    let arrivals = 0;
    handler = () => {
      arrivals++;
    };
    const target = poster();
    const cancel = new AttemptCancel();
    const attempt = post(target, cancel);
    await expect.poll(() => arrivals, { timeout: TIMEOUT_MS }).toBe(1);
    cancel.cancel();
    await expect(attempt).rejects.toThrow("attempt cancelled");
    expect(cancel.cancelled).toBe(true);

    await expect(post(target, cancel)).rejects.toThrow("attempt cancelled");
    // Give a request that was wrongly sent the time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(arrivals).toBe(1);
  });

  it("reuses an idle connection for the next attempt (keep-alive)", async () => {
    const ports = new Set<number>();
    handler = (req, res) => {
      ports.add(req.socket.remotePort ?? 0);
      req.resume();
      req.on("end", () => res.writeHead(204).end());
    };
    const target = poster();
    for (let i = 0; i < 3; i++) await post(target);
    expect(ports.size).toBe(1);
  });
});
