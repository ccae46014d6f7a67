/**
 * A TCP proxy in front of PostgreSQL that can lose an answer on purpose: armed with a marker, it cuts both sides
 * of the connection when the server's next chunk containing that marker arrives, before the client sees it. The
 * server has done the work (a COMMIT's CommandComplete is sent after the commit); the client gets "Connection
 * terminated unexpectedly". This is the failover case of docs/development.md note 26 ("commits whose outcome the client
 * never saw"), staged deterministically.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";

export interface CuttingProxy {
  /** Port on 127.0.0.1. */
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  /** Cuts the connection that next receives a server chunk containing `marker` (e.g. "COMMIT\0"). */
  arm(marker: string): void;
  /** How many connections were cut so far. */
  cuts(): number;
  close(): Promise<void>;
}

export async function startCuttingProxy(target: { host: string; port: number }): Promise<CuttingProxy> {
  let marker: Buffer | null = null;
  let cutCount = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: target.host, port: target.port });
    sockets.add(client);
    sockets.add(upstream);
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk: Buffer) => {
      if (marker && chunk.includes(marker)) {
        marker = null;
        cutCount += 1;
        closeBoth();
        return;
      }
      client.write(chunk);
    });
    client.on("error", closeBoth);
    upstream.on("error", closeBoth);
    client.on("close", closeBoth);
    upstream.on("close", closeBoth);
  });
  await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no port");
  const port = address.port;
  return {
    port,
    via(url) {
      const parsed = new URL(url);
      parsed.hostname = "127.0.0.1";
      parsed.port = String(port);
      return parsed.toString();
    },
    arm(next) {
      marker = Buffer.from(next, "utf8");
    },
    cuts: () => cutCount,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
