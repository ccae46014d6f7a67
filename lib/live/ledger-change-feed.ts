/**
 * The live feed of ledger changes: one LISTEN connection per process on `ledger_changes`, handed to each user's
 * subscribers, never silent when lost; why and how: docs/decisions/025-live-status-push.md. The database announces
 * only users registered in `live_watchers`: the feed registers a user before it says `ready` to them and renews the
 * rows while they are subscribed (docs/decisions/046-announce-only-watched-users.md).
 */
import pg from "pg";
import { z } from "zod";
import { env } from "../env";
import { log } from "../log";

/** The channel the trigger announces on. */
const LEDGER_CHANGES_CHANNEL = "ledger_changes";

/** The `application_name` of the listener's connection, to find it in `pg_stat_activity`. */
export const LISTENER_APPLICATION_NAME = "wallet-live";

/** What a subscriber is told. */
export type FeedEvent =
  /** Listening: announcements from now on reach the subscriber (after a `down`, some may have been lost). */
  | { readonly kind: "ready" }
  /** The listener's connection is lost: nothing reaches the subscriber until the next `ready`. */
  | { readonly kind: "down" }
  /** A row of the subscriber's user changed state. */
  | { readonly kind: "change"; readonly change: LedgerChange };

/** One announcement, as the trigger writes it. */
export type LedgerChange = z.infer<typeof changeSchema>;

const changeSchema = z.strictObject({
  userId: z.string().min(1).max(200),
  type: z.string().min(1).max(40),
  refId: z.string().min(1).max(128),
  status: z.enum(["initiated", "processing", "succeeded", "failed"]),
});

/** NOTIFY's payload limit (PostgreSQL: 8000 bytes); a longer one is not ours and is dropped unread. */
const PAYLOAD_BYTES_MAX = 8000;

/**
 * Back-off between connection attempts: 250 ms doubling to 5 s. A failover behind Patroni and HAProxy takes ~11 s
 * (docs/scaling.md), so the listener is back within ~5 s of the new primary; a database that is down for good costs
 * one attempt every 5 s.
 */
const RECONNECT_DELAY_MS_MIN = 250;
const RECONNECT_DELAY_MS_MAX = 5_000;

/**
 * The health probe: every 30 s, answered within 5 s. A TCP connection can die without a FIN (a host lost in a
 * failover); 30 s bounds how long the feed believes a dead connection, and is far below the pages' own watchdog.
 */
const PROBE_INTERVAL_MS = 30_000;
const PROBE_TIMEOUT_MS = 5_000;

/** How long the connection stays open after the last subscriber left: a page reload resubscribes within this. */
const IDLE_CLOSE_MS = 60_000;

/**
 * How long a registration in `live_watchers` holds without being renewed: 5 min. The probe renews every watched
 * user's row every {@link PROBE_INTERVAL_MS}; a row outlives a process that died by at most this, and costs only
 * announcements nobody hears (decision 046).
 */
const WATCH_TTL_S = 300;

/** Connection timeout of one attempt: 10 s, like the pool's. */
const CONNECT_TIMEOUT_MS = 10_000;

type Subscriber = (event: FeedEvent) => void;

/** Options for tests: the connection string and whether to connect again after a loss. */
export interface FeedOptions {
  /** Default: DATABASE_LISTEN_URL, else DATABASE_URL unless DB_POOLER is `transaction`. */
  readonly connectionString?: string | null;
  /** Default true. False exists for the negative control that shows the loss is real. */
  readonly reconnect?: boolean;
}

/** The address the listener connects to, or null when there is none it can use (behind a transaction pooler). */
function listenConnectionString(): string | null {
  const settings = env();
  if (settings.DATABASE_LISTEN_URL) return settings.DATABASE_LISTEN_URL;
  if (settings.DB_POOLER === "transaction") return null;
  return settings.DATABASE_URL ?? null;
}

/** One listener connection and the subscribers it serves. */
export class LedgerChangeFeed {
  private readonly subscribers = new Map<string, Set<Subscriber>>();
  private client: pg.Client | null = null;
  private listening = false;
  private connecting = false;
  private reconnectDelayMs = RECONNECT_DELAY_MS_MIN;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private probeTimer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Users registered in `live_watchers` on the current connection (cleared when it is lost). */
  private registered = new Set<string>();
  /** Registrations under way, by user: the subscribers that arrive meanwhile wait for the same one. */
  private registering = new Map<string, Promise<boolean>>();

  constructor(private readonly options: FeedOptions = {}) {}

  /** True when the feed has an address to listen on. */
  get available(): boolean {
    return this.connectionString() !== null;
  }

  /** True while LISTEN is active on a live connection. */
  get isListening(): boolean {
    return this.listening;
  }

  /** How many subscriptions are open (all users). */
  get subscriberCount(): number {
    let count = 0;
    for (const set of this.subscribers.values()) count += set.size;
    return count;
  }

  /** How many subscriptions `userId` has open. */
  subscriptionsOf(userId: string): number {
    return this.subscribers.get(userId)?.size ?? 0;
  }

  /**
   * Subscribes to the changes of `userId`'s rows. The subscriber gets `ready` at once when the feed is listening,
   * else when it starts to; then `change` for each announcement of that user, `down` when the connection is lost
   * and `ready` again once it listens anew. Returns the unsubscribe function (safe to call twice). Never throws:
   * connection failures are reported as `down` and retried.
   */
  subscribe(userId: string, subscriber: Subscriber): () => void {
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = null;
    }
    let set = this.subscribers.get(userId);
    if (!set) {
      set = new Set();
      this.subscribers.set(userId, set);
    }
    set.add(subscriber);
    if (this.listening) this.readyOnceWatched(userId, subscriber);
    else this.ensureConnecting();
    return () => {
      const current = this.subscribers.get(userId);
      if (!current?.delete(subscriber)) return;
      if (current.size === 0) {
        this.subscribers.delete(userId);
        // Its row is no longer renewed and lapses; a later subscriber registers it again.
        this.registered.delete(userId);
      }
      this.startIdleTimerIfUnused();
    };
  }

  /** Stops listening and forgets every subscriber (process shutdown, tests). */
  async close(): Promise<void> {
    this.closed = true;
    this.subscribers.clear();
    for (const timer of [this.reconnectTimer, this.probeTimer, this.idleTimer]) if (timer) clearTimeout(timer);
    await this.disconnect();
  }

  /**
   * Says `ready` to a subscriber of a listening feed once its user is registered as watched: announcements of that
   * user are sent from then on. A registration that fails means the connection is unusable (lost, reported `down`).
   */
  private readyOnceWatched(userId: string, subscriber: Subscriber): void {
    const client = this.client;
    if (!client) return;
    if (this.registered.has(userId)) {
      deliver(subscriber, { kind: "ready" });
      return;
    }
    let registration = this.registering.get(userId);
    if (!registration) {
      registration = this.register(client, [userId]).finally(() => this.registering.delete(userId));
      this.registering.set(userId, registration);
    }
    void registration.then((ok) => {
      if (ok && this.client === client && this.subscribers.get(userId)?.has(subscriber)) {
        deliver(subscriber, { kind: "ready" });
      }
    });
  }

  /**
   * Registers (or renews) `userIds` in `live_watchers` on `client` (the function waits out the transactions that
   * decided not to announce them, decision 046). Resolves false, after reporting the connection lost, when it fails.
   */
  private async register(client: pg.Client, userIds: readonly string[]): Promise<boolean> {
    try {
      await client.query({
        text: "SELECT live_watchers_register($1::text[], $2::int)",
        values: [userIds, WATCH_TTL_S],
        query_timeout: PROBE_TIMEOUT_MS,
      } as pg.QueryConfig);
    } catch (error) {
      this.lost(client, error instanceof Error ? error : new Error(String(error)));
      return false;
    }
    if (this.client !== client) return false;
    for (const userId of userIds) if (this.subscribers.has(userId)) this.registered.add(userId);
    return true;
  }

  private connectionString(): string | null {
    return this.options.connectionString !== undefined ? this.options.connectionString : listenConnectionString();
  }

  private ensureConnecting(): void {
    if (this.closed || this.client || this.connecting || this.reconnectTimer) return;
    void this.connect();
  }

  private async connect(): Promise<void> {
    const connectionString = this.connectionString();
    if (!connectionString || this.closed) return;
    this.connecting = true;
    const client = new pg.Client({
      connectionString,
      application_name: LISTENER_APPLICATION_NAME,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
    });
    // Registered before connect: an error on this socket at any time must not crash the process.
    client.on("error", (error) => this.lost(client, error));
    client.on("end", () => this.lost(client, new Error("connection ended")));
    client.on("notification", (message) => {
      if (message.channel === LEDGER_CHANGES_CHANNEL) this.announce(message.payload);
    });
    try {
      await client.connect();
      // A standby answers LISTEN with an error; a connection routed to one after a failover is refused here.
      const recovery = await client.query<{ standby: boolean }>("SELECT pg_is_in_recovery() AS standby");
      if (recovery.rows[0]?.standby) throw new Error("the database is a standby: cannot LISTEN for the primary");
      await client.query(`LISTEN ${LEDGER_CHANGES_CHANNEL}`);
    } catch (error) {
      this.connecting = false;
      client.removeAllListeners("end");
      client.on("error", () => {});
      await client.end().catch(() => {});
      log().warn({ err: error }, "live updates: could not listen for ledger changes; retrying");
      this.scheduleReconnect();
      return;
    }
    this.connecting = false;
    if (this.closed || this.subscribers.size === 0) {
      // Everyone left (or the feed closed) while connecting.
      this.client = client;
      this.listening = true;
      if (this.closed) await this.disconnect();
      else this.startIdleTimerIfUnused();
      return;
    }
    this.client = client;
    this.registered.clear();
    // Every subscribed user is registered before anyone hears `ready`, those who subscribe meanwhile included.
    let unregistered = [...this.subscribers.keys()];
    while (unregistered.length > 0) {
      if (!(await this.register(client, unregistered))) return;
      unregistered = [...this.subscribers.keys()].filter((userId) => !this.registered.has(userId));
    }
    this.listening = true;
    this.reconnectDelayMs = RECONNECT_DELAY_MS_MIN;
    this.startProbe(client);
    log().info({ subscribers: this.subscriberCount }, "live updates: listening for ledger changes");
    this.broadcast({ kind: "ready" });
  }

  private startIdleTimerIfUnused(): void {
    if (this.subscribers.size > 0 || this.idleTimer) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.subscribers.size === 0) void this.disconnect();
    }, IDLE_CLOSE_MS);
    this.idleTimer.unref();
  }

  private startProbe(client: pg.Client): void {
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.probeTimer = setInterval(() => {
      if (this.client !== client) return;
      const probe = client.query<{ standby: boolean }>({
        text: "SELECT pg_is_in_recovery() AS standby",
        query_timeout: PROBE_TIMEOUT_MS,
      } as pg.QueryConfig);
      probe
        .then((result) => {
          if (result.rows[0]?.standby) this.lost(client, new Error("the listener's database became a standby"));
          // Renews the watched users' rows (and registers none anew: those are registered by their subscribe).
          else if (this.registered.size > 0) void this.register(client, [...this.registered]);
        })
        .catch((error: unknown) => this.lost(client, error instanceof Error ? error : new Error(String(error))));
    }, PROBE_INTERVAL_MS);
    this.probeTimer.unref();
  }

  /** The listener's connection is gone or unusable: tell everyone, drop it, and connect again. */
  private lost(client: pg.Client, error: Error): void {
    if (this.client !== client) return;
    this.client = null;
    this.listening = false;
    this.registered.clear();
    if (this.probeTimer) {
      clearInterval(this.probeTimer);
      this.probeTimer = null;
    }
    client.removeAllListeners("end");
    client.on("error", () => {});
    void client.end().catch(() => {});
    if (this.closed) return;
    log().warn({ message: error.message }, "live updates: lost the listener's connection");
    this.broadcast({ kind: "down" });
    if (this.options.reconnect !== false) this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer || this.subscribers.size === 0) return;
    const delayMs = this.reconnectDelayMs;
    this.reconnectDelayMs = Math.min(this.reconnectDelayMs * 2, RECONNECT_DELAY_MS_MAX);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.subscribers.size > 0) this.ensureConnecting();
    }, delayMs);
    this.reconnectTimer.unref();
  }

  private async disconnect(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.listening = false;
    this.registered.clear();
    if (this.probeTimer) {
      clearInterval(this.probeTimer);
      this.probeTimer = null;
    }
    if (!client) return;
    client.removeAllListeners("end");
    client.on("error", () => {});
    await client.end().catch(() => {});
  }

  private announce(payload: string | undefined): void {
    if (!payload || Buffer.byteLength(payload) > PAYLOAD_BYTES_MAX) return;
    let parsed: LedgerChange;
    try {
      const result = changeSchema.safeParse(JSON.parse(payload));
      if (!result.success) return;
      parsed = result.data;
    } catch {
      return;
    }
    const set = this.subscribers.get(parsed.userId);
    if (!set) return;
    for (const subscriber of [...set]) deliver(subscriber, { kind: "change", change: parsed });
  }

  private broadcast(event: FeedEvent): void {
    for (const set of this.subscribers.values()) for (const subscriber of [...set]) deliver(subscriber, event);
  }
}

/** Calls one subscriber; its failure is its own (logged), never the feed's. */
function deliver(subscriber: Subscriber, event: FeedEvent): void {
  try {
    subscriber(event);
  } catch (error) {
    log().error({ err: error }, "live updates: a subscriber threw");
  }
}

const globalKey = Symbol.for("wallet.live.ledgerChangeFeed");
type GlobalWithFeed = typeof globalThis & { [globalKey]?: LedgerChangeFeed };

/** The process's feed (created on first use; it connects when the first subscriber arrives). */
export function ledgerChangeFeed(): LedgerChangeFeed {
  const g = globalThis as GlobalWithFeed;
  g[globalKey] ??= new LedgerChangeFeed();
  return g[globalKey];
}
