/**
 * `GET /api/v1/events`: the signed-in user's live status as Server-Sent Events (docs/decisions/025-live-status-push.md).
 * One stream per open page, fed by the process's ledger change feed (./ledger-change-feed.ts):
 *
 *     retry: 3000                      reconnect after 3 s when the stream breaks (an app restart)
 *     event: ready    data: {}         listening: changes from now on arrive (refresh once: some may be missed)
 *     event: change   data: {"type":"topup","refId":"…","status":"succeeded"}
 *     event: down     data: {}         the feed lost its database connection: poll until the next `ready`
 *     event: ping     data: {}         every 15 s, so the page can tell a silent stream from a dead one
 *
 * An event names the row and its new state, never an amount: the page reads the rest through its own request. The
 * stream ends after {@link STREAM_MS_MAX} (the browser reconnects, and the session or token is checked again, so a
 * revoked one stops receiving), and when the client goes away.
 */
import type { Principal } from "../auth/principal";
import { problemResponse } from "../http/respond";
import { ledgerChangeFeed, type FeedEvent, type LedgerChangeFeed } from "./ledger-change-feed";

/**
 * Streams one user may hold open in one app process: 10 is more tabs of one wallet than a person uses; a script
 * that opens streams in a loop gets 429 instead of holding a process's memory and file descriptors.
 */
const STREAMS_PER_USER_MAX = 10;

/** Streams one process serves at once: 2,000 idle streams cost a few MB; past that the pages poll (503). */
const STREAMS_PER_PROCESS_MAX = 2_000;

/**
 * A keep-alive event every 15 s: below the 30-60 s idle timeouts of common proxies (HAProxy's `timeout server` in
 * `npm run cluster` is 60 s), and what the page's watchdog counts on (it gives up after three silent periods).
 */
const PING_INTERVAL_MS = 15_000;

/** The browser reconnects 3 s after a broken stream: an app restart is back within that on a quiet machine. */
const RETRY_MS = 3_000;

/**
 * A stream lasts at most 10 minutes, then ends cleanly; the browser reconnects after `retry`, and the principal is
 * authenticated again, so a session signed out or a token revoked stops receiving within 10 minutes.
 */
const STREAM_MS_MAX = 10 * 60_000;

const encoder = new TextEncoder();

function frame(event: string, data: unknown): Uint8Array {
  return encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function frameFor(event: FeedEvent): Uint8Array {
  switch (event.kind) {
    case "ready":
      return frame("ready", {});
    case "down":
      return frame("down", {});
    case "change": {
      const { type, refId, status } = event.change;
      return frame("change", { type, refId, status });
    }
  }
}

/**
 * The stream for `principal`, ending when the request's `signal` aborts or after {@link STREAM_MS_MAX}. Answers
 * `503 service_unavailable` when the process has no listener (behind a transaction pooler without
 * DATABASE_LISTEN_URL) or serves {@link STREAMS_PER_PROCESS_MAX} streams, and `429 rate_limited` when the user holds
 * {@link STREAMS_PER_USER_MAX}; each with `Retry-After`, and the page polls meanwhile. A HEAD gets the
 * headers only (no subscription).
 */
export function eventStreamResponse(
  principal: Principal,
  request: Pick<Request, "method" | "signal">,
  feed: LedgerChangeFeed = ledgerChangeFeed(),
): Response {
  const { method, signal } = request;
  if (!feed.available) {
    return problemResponse(
      "service_unavailable",
      "Live updates are off on this server (no direct database connection to listen on); poll instead.",
      {},
      { "Retry-After": "60" },
    );
  }
  if (feed.subscriberCount >= STREAMS_PER_PROCESS_MAX) {
    return problemResponse(
      "service_unavailable",
      "Too many live streams on this server; poll instead.",
      {},
      {
        "Retry-After": "30",
      },
    );
  }
  if (feed.subscriptionsOf(principal.userId) >= STREAMS_PER_USER_MAX) {
    return problemResponse(
      "rate_limited",
      `At most ${STREAMS_PER_USER_MAX} live streams per user; close one or poll instead.`,
      {},
      { "Retry-After": "30" },
    );
  }
  if (method === "HEAD") return new Response(null, { status: 200, headers: STREAM_HEADERS });
  let cleanup = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      const send = (chunk: Uint8Array) => {
        if (!open) return;
        try {
          controller.enqueue(chunk);
        } catch {
          cleanup();
        }
      };
      send(encoder.encode(`retry: ${RETRY_MS}\n\n`));
      const unsubscribe = feed.subscribe(principal.userId, (event) => send(frameFor(event)));
      const ping = setInterval(() => send(frame("ping", {})), PING_INTERVAL_MS);
      const end = setTimeout(() => cleanup(), STREAM_MS_MAX);
      cleanup = () => {
        if (!open) return;
        open = false;
        clearInterval(ping);
        clearTimeout(end);
        signal.removeEventListener("abort", cleanup);
        unsubscribe();
        try {
          controller.close();
        } catch {
          // Already closed by the client going away.
        }
      };
      signal.addEventListener("abort", cleanup);
      if (signal.aborted) cleanup();
    },
    cancel() {
      cleanup();
    },
  });
  return new Response(body, { status: 200, headers: STREAM_HEADERS });
}

const STREAM_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream; charset=utf-8",
  // no-transform: no compression layer (Next's, a proxy's) may buffer the stream to compress it.
  "cache-control": "no-cache, no-transform",
  // nginx and some other proxies buffer responses unless told not to.
  "x-accel-buffering": "no",
};
