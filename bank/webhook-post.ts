/**
 * One webhook attempt's transport: a POST of the exact body bytes to the app over node:http(s), on a keep-alive
 * agent shared by the bank's deliveries. node:http rather than fetch(): an attempt is a few callbacks instead of
 * fetch's web streams, Headers and combined abort signals, which cost the sandbox bank about a fifth of its CPU
 * per charge (docs/benchmarks.md, "The sandbox bank's CPU per charge"). Redirects are never followed.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/** The app's answer to one attempt: its status and the first `excerptChars` characters of its body. */
export interface WebhookAnswer {
  status: number;
  body: string;
}

/** The attempt took longer than its budget (connect, send and answer). */
export class WebhookTimeoutError extends Error {
  override name = "TimeoutError";
}

/**
 * Cancels an attempt in flight (the bank stopping). A plain callback rather than an AbortController: an
 * AbortSignal is an EventTarget, whose listeners cost more than the rest of an attempt's bookkeeping.
 */
export class AttemptCancel {
  private onCancel: (() => void) | null = null;
  private done = false;

  /** True once {@link cancel} was called. */
  get cancelled(): boolean {
    return this.done;
  }

  /** Ends the attempt at once: its `post` rejects and its connection is closed. Safe to call twice. */
  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.onCancel?.();
  }

  /** @internal the attempt's hook (null once it has settled). */
  listen(onCancel: (() => void) | null): void {
    this.onCancel = onCancel;
  }
}

/** Sends webhooks to one URL, at most `concurrency` connections at once, reusing idle ones. */
export class WebhookPoster {
  private readonly url: URL;
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;

  /**
   * @param url the app's webhook endpoint (http: or https:).
   * @param concurrency the most attempts in flight at once (BANK_WEBHOOK_CONCURRENCY): the agent's socket bound.
   */
  constructor(url: string, concurrency: number) {
    this.url = new URL(url);
    const https = this.url.protocol === "https:";
    const options = { keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency };
    this.agent = https ? new HttpsAgent(options) : new HttpAgent(options);
    this.send = https ? httpsRequest : httpRequest;
  }

  /**
   * POSTs `body` with `headers` (content-length is added). Resolves with the answer once its body has ended,
   * whatever its status; the body is read to the end but only its first `excerptChars` characters are kept.
   *
   * @throws {@link WebhookTimeoutError} when the whole attempt takes over `timeoutMs`; an Error when `cancel`
   *   is cancelled; the socket's error otherwise (with `code`, e.g. ECONNREFUSED, ECONNRESET).
   */
  post(
    body: string,
    headers: Record<string, string>,
    options: { timeoutMs: number; cancel: AttemptCancel; excerptChars: number },
  ): Promise<WebhookAnswer> {
    if (options.cancel.cancelled) return Promise.reject(new Error("attempt cancelled"));
    return new Promise<WebhookAnswer>((resolve, reject) => {
      let settled = false;
      const finish = (error: unknown, answer?: WebhookAnswer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        options.cancel.listen(null);
        if (answer) resolve(answer);
        else {
          reject(error);
          request.destroy();
        }
      };
      const request = this.send(this.url, {
        method: "POST",
        agent: this.agent,
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      });
      // First, so that no error of the request (a destroy included) is ever unhandled.
      request.on("error", (error) => finish(error));
      const timer = setTimeout(
        () => finish(new WebhookTimeoutError(`timeout after ${options.timeoutMs} ms`)),
        options.timeoutMs,
      );
      options.cancel.listen(() => finish(new Error("attempt cancelled")));
      request.on("response", (response: IncomingMessage) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          if (text.length < options.excerptChars) text += chunk;
        });
        // The connection closed before the body ended (the app died mid-answer): ECONNRESET, no answer.
        response.on("error", (error) => finish(error));
        response.on("end", () =>
          finish(null, { status: response.statusCode ?? 0, body: text.slice(0, options.excerptChars) }),
        );
      });
      request.end(body);
    });
  }

  /** Closes every connection (after the last attempt). */
  close(): void {
    this.agent.destroy();
  }
}
