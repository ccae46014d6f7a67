/**
 * A tiny loopback router between the sandbox bank and the app instances. The bank has one `APP_URL`; behind a load
 * balancer each webhook delivery can land on any instance, so the router forwards each delivery, bytes and headers
 * unchanged, to an instance picked at random (seeded), after a random hold of up to 40 ms that shuffles the order of
 * deliveries sent close together (more reordering on top of the bank's own). An instance that is down (the staged
 * SIGKILL) makes the router answer 502, and the bank retries later, as it would with a real load balancer.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import { seededRandom } from "../../bank/faults";

export interface WebhookRouter {
  /** `http://127.0.0.1:<port>`: the bank's APP_URL. */
  readonly url: string;
  /** Deliveries forwarded per instance (any answer), and deliveries that reached no instance (answered 502). */
  counts(): { perInstance: number[]; unreachable: number };
  close(): Promise<void>;
}

/**
 * Longest random hold before forwarding, in ms. 40 ms is several times the app's webhook handling time (a few ms),
 * so two deliveries sent within that window come out in either order, while the bank's per-attempt budget
 * (3 s in the storm) is never at risk.
 */
const HOLD_MS_MAX = 40;

/** Largest webhook body forwarded: the bank's events are ~300 bytes; 64 KiB matches the bank's own request limit. */
const BODY_BYTES_MAX = 64 * 1024;

/** Budget of one forward, in ms: 2.5 s, below the bank's 3 s attempt budget so the router answers first. */
const FORWARD_TIMEOUT_MS = 2500;

/** Headers of a delivery that the app reads or that identify it; everything else is dropped. */
const FORWARDED_HEADERS = ["content-type", "bank-signature", "bank-delivery-attempt", "user-agent"];

/**
 * Starts the router on 127.0.0.1 and a free port. `appUrls` are the instances' base URLs; `seed` makes the choice
 * of instance and the holds reproducible. Resolves once it listens.
 */
export function startWebhookRouter(options: { appUrls: readonly string[]; seed: number }): Promise<WebhookRouter> {
  const random = seededRandom(options.seed ^ 0x5eed);
  const perInstance = options.appUrls.map(() => 0);
  let unreachable = 0;

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const index = Math.floor(random() * options.appUrls.length);
    const target = new URL(req.url ?? "/", options.appUrls[index]);
    const headers: Record<string, string | number> = { "content-length": body.length };
    for (const name of FORWARDED_HEADERS) {
      const value = req.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    const upstream = request(
      {
        method: req.method,
        hostname: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        headers,
        timeout: FORWARD_TIMEOUT_MS,
      },
      (answer) => {
        perInstance[index]! += 1;
        res.writeHead(answer.statusCode ?? 502, {
          "content-type": answer.headers["content-type"] ?? "application/json",
        });
        answer.pipe(res);
      },
    );
    upstream.on("timeout", () => upstream.destroy(new Error("forward timed out")));
    upstream.on("error", () => {
      unreachable += 1;
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
      res.end('{"error":"instance unreachable"}');
    });
    upstream.end(body);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= BODY_BYTES_MAX) chunks.push(chunk);
    });
    req.on("end", () => {
      if (bytes > BODY_BYTES_MAX) {
        res.writeHead(413).end();
        return;
      }
      const body = Buffer.concat(chunks);
      setTimeout(() => forward(req, res, body), Math.floor(random() * HOLD_MS_MAX));
    });
  });
  // Bank connections are kept alive between deliveries; close idle ones quickly at shutdown.
  server.keepAliveTimeout = 1000;

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port: 0 }, () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        reject(new Error("webhook router: no port"));
        return;
      }
      resolve({
        url: `http://127.0.0.1:${address.port}`,
        counts: () => ({ perInstance: [...perInstance], unreachable }),
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
