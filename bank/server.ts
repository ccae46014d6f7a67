/**
 * The sandbox bank's HTTP surface (contract section 5; docs/bank-sandbox.md):
 *
 *   POST /charges          create at most one charge per Idempotency-Key (201 new, 200 repeat, 409, 422)
 *   GET  /charges          ?merchantRef=... one charge or 404; ?since=<ISO>[&limit][&startingAfter] a page
 *   POST /charges/cancel   make an unused key unusable; report the charge when one exists
 *   POST /refunds, GET /refunds?chargeId=, GET /refunds/{id}   refunds (bank/refunds.ts)
 *   GET  /disputes         ?since=<ISO time | cursor>[&limit] a page of disputes; /disputes/{id} one (disputes.ts)
 *   POST /payouts, GET /payouts?merchantRef= | ?since=, GET /payouts/{id}   payouts (bank/payouts.ts)
 *   GET  /health
 *   /_sandbox/...          test controls, loopback clients only
 *
 * Errors are `{ "error": { "code", "message", "fields"? } }`. Transport is thin: decisions live in engine.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Logger } from "pino";
import { z } from "zod";
import type { BankConfig } from "./config";
import { openDisputeBodySchema, publicDispute } from "./disputes";
import { publicCharge, type BankEngine } from "./engine";
import { handlePayoutRoute } from "./payouts";
import { handleRefundRoute } from "./refunds";
import type { BankState, DeliveryRecord } from "./state";

/** Largest accepted request body. A charge request is under 1 KB; 64 KiB leaves room and bounds memory per request. */
const BODY_LIMIT_BYTES = 64 * 1024;
/** `since` pages: 100 by default, at most 1000 (the brief's bound; ~250 KB of JSON). */
const DEFAULT_PAGE_LIMIT = 100;
const MAX_PAGE_LIMIT = 1000;
/**
 * A merchant reference (and so an Idempotency-Key) is 1..400 printable ASCII characters: the longest top-up
 * reference is `topup:` + a 255-character user id + `:` + a 128-character ref id = 390 (lib/bank/merchant-ref.ts).
 * The bank treats references as opaque beyond that; only the sandbox switches look inside them.
 */
const MERCHANT_REF_PATTERN = /^[\x21-\x7e]{1,400}$/;

const chargeBodySchema = z
  .object({
    merchantRef: z.string().regex(MERCHANT_REF_PATTERN, "must be 1..400 printable ASCII characters"),
    // Minor units; 2^53 - 1 is the largest integer JSON and JavaScript agree on exactly.
    amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    currency: z.string().regex(/^[A-Z]{3}$/, "must be an ISO 4217 alphabetic code"),
  })
  .strict();
const cancelBodySchema = z.object({ merchantRef: z.string() }).strict();
const probability = z.number().min(0).max(1);
const ratesPatchSchema = z
  .object({
    decline: probability,
    slow: probability,
    lost: probability,
    dup: probability,
    reorder: probability,
    nohook: probability,
    /** The payouts' rates (bank/payouts.ts), changed the same way. */
    payouts: z
      .object({
        fail: probability,
        slow: probability,
        lost: probability,
        dup: probability,
        reorder: probability,
        nohook: probability,
      })
      .partial()
      .strict(),
  })
  .partial()
  .strict();
const sinceSchema = z.iso.datetime({ offset: true });

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields?: string[],
  ) {
    super(message);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(text)),
    "cache-control": "no-store",
    ...headers,
  });
  res.end(text);
}

async function readJsonBody(req: IncomingMessage, required: boolean): Promise<unknown> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > BODY_LIMIT_BYTES) throw new HttpError(413, "payload_too_large", `body over ${BODY_LIMIT_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_LIMIT_BYTES) throw new HttpError(413, "payload_too_large", `body over ${BODY_LIMIT_BYTES} bytes`);
    chunks.push(chunk);
  }
  if (size === 0) {
    if (required) throw new HttpError(400, "invalid_request", "a JSON body is required");
    return undefined;
  }
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json")
    throw new HttpError(415, "unsupported_media_type", "the body must be application/json");
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new HttpError(400, "invalid_request", "the body is not valid JSON");
  }
}

function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new HttpError(400, "invalid_request", `${issue?.path.join(".") || "body"}: ${issue?.message ?? "invalid"}`);
  }
  return result.data;
}

function idempotencyKeyOf(req: IncomingMessage): string {
  const key = req.headers["idempotency-key"];
  if (typeof key !== "string" || !MERCHANT_REF_PATTERN.test(key)) {
    throw new HttpError(400, "invalid_request", "the Idempotency-Key header (the merchant reference) is required");
  }
  return key;
}

function isLoopback(address: string | undefined): boolean {
  return (
    address !== undefined && (address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127."))
  );
}

function pageLimit(raw: string | null): number {
  if (raw === null) return DEFAULT_PAGE_LIMIT;
  if (!/^[0-9]{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_PAGE_LIMIT) {
    throw new HttpError(400, "invalid_request", `limit must be an integer 1..${MAX_PAGE_LIMIT}`);
  }
  return Number(raw);
}

function deliveryView(d: DeliveryRecord) {
  const { id, eventId, type, chargeId, merchantRef, copy, status, attempts, createdAt, finishedAt, body } = d;
  return {
    id,
    eventId,
    type,
    after: d.after ?? null,
    chargeId,
    merchantRef,
    copy,
    status,
    attempts,
    nextAttemptAt: status === "pending" ? new Date(d.nextAttemptAtMs).toISOString() : null,
    createdAt,
    finishedAt: finishedAt ?? null,
    body,
  };
}

export interface BankServerOptions {
  config: BankConfig;
  state: BankState;
  engine: BankEngine;
  logger: Logger;
}

export interface BankServer {
  server: Server;
  /** Cancels replies still sleeping on the slow switch (their connections are closed by the caller). */
  cancelSlowReplies(): void;
}

/**
 * Creates the bank's HTTP server (not yet listening).
 *
 * @param options the settings, the state, the engine deciding charges, and a logger.
 * @returns the node:http server and a hook for shutdown.
 */
export function createBankServer(options: BankServerOptions): BankServer {
  const { config, state, engine, logger } = options;
  const slowReplies = new Set<{ timer: NodeJS.Timeout; res: ServerResponse }>();

  async function persistOrThrow(): Promise<void> {
    try {
      await state.save();
    } catch (error) {
      logger.error({ err: error }, "state not saved");
      // The change is not durable: the client must treat the outcome as unknown and ask again.
      throw new HttpError(500, "internal_error", "state could not be saved");
    }
  }

  async function postCharge(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const key = idempotencyKeyOf(req);
    const body = parseOrThrow(chargeBodySchema, await readJsonBody(req, true));
    if (body.merchantRef !== key) {
      throw new HttpError(400, "invalid_request", "Idempotency-Key must equal merchantRef (contract section 5)");
    }
    const decision = engine.decideCharge(body);
    // The answer describes the charge as it was when this request was decided (a new charge is `pending` even if
    // it settles while the state file is being written), like a provider's reply prepared before it is sent.
    const view = decision.kind === "created" || decision.kind === "existing" ? publicCharge(decision.charge) : null;
    // Durable before acknowledged, for every outcome: a repeat may arrive while the creator's write is in flight.
    await persistOrThrow();
    switch (decision.kind) {
      case "cancelled":
        throw new HttpError(
          409,
          "idempotency_key_cancelled",
          "this merchant reference was cancelled; no charge can be made",
        );
      case "mismatch":
        throw new HttpError(
          422,
          "idempotency_key_reused",
          "this merchant reference already has a charge with other parameters",
          decision.fields,
        );
      case "existing":
        // Transport faults (slow, lost) hit only the request that created the charge, as a one-off network event;
        // a repeat is answered at once, which is how a client recovers.
        sendJson(res, 200, view, { "idempotent-replayed": "true" });
        return;
      case "created": {
        const { charge } = decision;
        if (charge.faults.lost) {
          // Contract section 5: the charge is made, the reply is dropped.
          logger.info({ chargeId: charge.id }, "lost switch: dropping the reply");
          req.socket.destroy();
          return;
        }
        if (charge.faults.slow) {
          const entry = {
            res,
            timer: setTimeout(() => {
              slowReplies.delete(entry);
              sendJson(res, 201, view);
            }, config.slowMs),
          };
          slowReplies.add(entry);
          return;
        }
        sendJson(res, 201, view);
        return;
      }
    }
  }

  function getCharges(url: URL, res: ServerResponse): void {
    const merchantRef = url.searchParams.get("merchantRef");
    const since = url.searchParams.get("since");
    if ((merchantRef === null) === (since === null)) {
      throw new HttpError(400, "invalid_request", "give exactly one of merchantRef and since");
    }
    if (merchantRef !== null) {
      const charge = state.chargesByRef.get(merchantRef);
      if (!charge) throw new HttpError(404, "not_found", "no charge for this merchant reference");
      sendJson(res, 200, publicCharge(charge));
      return;
    }
    if (!sinceSchema.safeParse(since).success) {
      throw new HttpError(
        400,
        "invalid_request",
        "since must be an ISO-8601 time with offset, e.g. 2026-01-01T00:00:00Z",
      );
    }
    const sinceMs = Date.parse(since as string);
    const limit = pageLimit(url.searchParams.get("limit"));
    const startingAfter = url.searchParams.get("startingAfter");
    let start = 0;
    if (startingAfter !== null) {
      const anchor = state.chargesById.get(startingAfter);
      if (!anchor) throw new HttpError(400, "invalid_request", "startingAfter is not a known charge id");
      start = state.charges.indexOf(anchor) + 1;
    }
    const page = [];
    let hasMore = false;
    for (let i = start; i < state.charges.length; i++) {
      const charge = state.charges[i] as (typeof state.charges)[number];
      if (Date.parse(charge.createdAt) < sinceMs) continue;
      if (page.length === limit) {
        hasMore = true;
        break;
      }
      page.push(publicCharge(charge));
    }
    sendJson(res, 200, { charges: page, hasMore });
  }

  async function postCancel(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const key = idempotencyKeyOf(req);
    const body = await readJsonBody(req, false);
    if (body !== undefined && parseOrThrow(cancelBodySchema, body).merchantRef !== key) {
      throw new HttpError(400, "invalid_request", "Idempotency-Key must equal merchantRef");
    }
    const decision = engine.cancelKey(key);
    await persistOrThrow();
    sendJson(res, 200, {
      cancelled: decision.cancelled,
      charge: decision.charge ? publicCharge(decision.charge) : null,
    });
  }

  const refundContext = {
    desk: engine.refunds,
    state,
    idempotencyKeyOf,
    readBody: async <T>(req: IncomingMessage, schema: z.ZodType<T>) =>
      parseOrThrow(schema, await readJsonBody(req, true)),
    persist: persistOrThrow,
    sendJson,
    fail: (status: number, code: string, message: string, fields?: string[]): never => {
      throw new HttpError(status, code, message, fields);
    },
  };

  const payoutContext = {
    ...refundContext,
    desk: engine.payouts,
    pageLimit,
    sendSlowly(res: ServerResponse, status: number, body: unknown): void {
      const entry = {
        res,
        timer: setTimeout(() => {
          slowReplies.delete(entry);
          sendJson(res, status, body);
        }, config.slowMs),
      };
      slowReplies.add(entry);
    },
  };

  function faultsView() {
    return { rates: engine.faultRates, payoutRates: engine.payouts.faultRates, syncSuccess: config.syncSuccess };
  }

  async function sandbox(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    // The controls change how the bank behaves: only local clients may use them, whatever BANK_HOST is.
    if (!isLoopback(req.socket.remoteAddress))
      throw new HttpError(403, "forbidden", "sandbox controls are loopback-only");
    const route = `${req.method} ${url.pathname}`;
    switch (route) {
      case "GET /_sandbox/faults":
        sendJson(res, 200, faultsView());
        return;
      case "POST /_sandbox/faults": {
        const { payouts, ...patch } = parseOrThrow(ratesPatchSchema, await readJsonBody(req, true));
        engine.faultRates = { ...engine.faultRates, ...patch };
        engine.payouts.faultRates = { ...engine.payouts.faultRates, ...payouts };
        logger.info({ rates: engine.faultRates, payoutRates: engine.payouts.faultRates }, "fault rates changed");
        sendJson(res, 200, faultsView());
        return;
      }
      case "POST /_sandbox/webhooks/pause":
        engine.pauseWebhooks();
        sendJson(res, 200, { paused: true });
        return;
      case "POST /_sandbox/webhooks/resume":
        engine.resumeWebhooks();
        sendJson(res, 200, { paused: false });
        return;
      case "GET /_sandbox/deliveries": {
        const merchantRef = url.searchParams.get("merchantRef");
        const eventId = url.searchParams.get("eventId");
        const status = url.searchParams.get("status");
        const limit = pageLimit(url.searchParams.get("limit"));
        const matching = state.deliveries.filter(
          (d) =>
            (merchantRef === null || d.merchantRef === merchantRef) &&
            (eventId === null || d.eventId === eventId) &&
            (status === null || d.status === status),
        );
        // The most recent `limit` matches, oldest first.
        sendJson(res, 200, { deliveries: matching.slice(-limit).map(deliveryView) });
        return;
      }
      case "POST /_sandbox/disputes": {
        const body = parseOrThrow(openDisputeBodySchema, await readJsonBody(req, true));
        const charge = state.chargesById.get(body.chargeId);
        if (charge?.status !== "succeeded")
          throw new HttpError(409, "not_disputable", "only a succeeded charge can be disputed");
        const opened = engine.disputes.open(charge, body.plan ?? ["lost"], Date.now());
        if (opened.kind === "already_disputed")
          throw new HttpError(409, "already_disputed", `the charge already has dispute ${opened.disputeId}`);
        if (opened.kind === "fully_refunded")
          throw new HttpError(409, "not_disputable", "the charge's refunds already return all of it");
        await persistOrThrow();
        sendJson(res, 201, publicDispute(opened.dispute));
        return;
      }
      case "POST /_sandbox/deliveries/retry-now":
        sendJson(res, 200, { rescheduled: engine.retryNow() });
        return;
      default:
        throw new HttpError(404, "not_found", `no sandbox control ${route}`);
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://bank.invalid");
    const route = `${req.method} ${url.pathname}`;
    if (url.pathname.startsWith("/_sandbox/")) return sandbox(req, res, url);
    if (url.pathname === "/refunds" || url.pathname.startsWith("/refunds/")) {
      if (await handleRefundRoute(req, res, url, refundContext)) return;
    }
    if (url.pathname === "/payouts" || url.pathname.startsWith("/payouts/")) {
      if (await handlePayoutRoute(req, res, url, payoutContext)) return;
    }
    const disputes = engine.disputes.answer(req.method, url, pageLimit);
    if (disputes) return sendJson(res, disputes.status, disputes.body);
    switch (route) {
      case "POST /charges":
        return postCharge(req, res);
      case "GET /charges":
        return getCharges(url, res);
      case "POST /charges/cancel":
        return postCancel(req, res);
      case "GET /health":
        sendJson(res, 200, {
          status: "ok",
          charges: state.charges.length,
          refunds: state.refunds.length,
          payouts: state.payouts.length,
          pendingDeliveries: engine.pendingDeliveryCount(),
          webhooksPaused: engine.webhooksPaused,
        });
        return;
      default:
        if (["/charges", "/charges/cancel", "/health"].includes(url.pathname)) {
          throw new HttpError(405, "method_not_allowed", `${req.method} is not allowed on ${url.pathname}`);
        }
        throw new HttpError(404, "not_found", `no route ${route}`);
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof HttpError) {
        const body: Record<string, unknown> = { code: error.code, message: error.message };
        if (error.fields) body.fields = error.fields;
        sendJson(res, error.status, { error: body });
        return;
      }
      logger.error({ err: error, method: req.method, url: req.url }, "request failed");
      sendJson(res, 500, { error: { code: "internal_error", message: "internal error" } });
    });
  });
  // Bounds on slow or idle clients: 10 s to send headers, 30 s for a whole request (a charge body is tiny);
  // keep-alive sockets idle for 5 s are closed (the Node default, written down).
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;

  return {
    server,
    cancelSlowReplies() {
      for (const entry of slowReplies) clearTimeout(entry.timer);
      slowReplies.clear();
    },
  };
}
