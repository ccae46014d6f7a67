/**
 * The one place that reads `process.env`. Every setting is validated with zod once; a bad value fails start-up
 * (and `next build`, which imports this module from next.config.ts) with a readable list of what is wrong.
 * Defaults and units are documented in `.env.example`; the contract (../shared/docs/wallet-contract.md,
 * section 4) fixes the defaults marked "contract".
 */
import { z } from "zod";

const intFrom = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const optionalUrl = z.preprocess((v) => (v === "" ? undefined : v), z.url().optional());

const schema = z
  .object({
    NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
    /** PostgreSQL URL. Unset means "the demo launcher starts an embedded PostgreSQL and sets this for the app". */
    DATABASE_URL: optionalUrl,
    /** Redis URL. Unset means rewards answer 503 cap_store_unavailable (contract section 6). */
    REDIS_URL: optionalUrl,
    /** Contract: 3000. */
    PORT: intFrom(1, 65535).default(3000),
    /** Contract: PORT + 1. */
    BANK_PORT: intFrom(1, 65535).optional(),
    /** Contract: http://127.0.0.1:$BANK_PORT. */
    BANK_URL: optionalUrl,
    /** Contract: http://127.0.0.1:$PORT. The bank sends its webhooks here. */
    APP_URL: optionalUrl,
    /** Comma-separated; every one is accepted when verifying, the first one signs (secret rotation). */
    BANK_WEBHOOK_SECRETS: z.string().min(1).default("whsec_dev_only_change_me"),
    /** Session signing secret for better-auth; at least 32 characters. */
    BETTER_AUTH_SECRET: z.string().min(32).default("dev-only-secret-change-me-0123456789abcdef"),
    /** Contract: 1,000,000 minor units. 2^53 - 1 is the hard ceiling (JSON integers). */
    MAX_AMOUNT_MINOR: intFrom(1, Number.MAX_SAFE_INTEGER).default(1_000_000),
    /** Contract: 3000 ms, how long a loser waits for the winner's stored response before answering 409. */
    IDEMPOTENCY_WAIT_MS: intFrom(0, 60_000).default(3000),
    /** Contract: USD. ISO 4217 alphabetic code. */
    WALLET_CURRENCY: z
      .string()
      .regex(/^[A-Z]{3}$/)
      .default("USD"),
    /**
     * How long a worker owns a claimed row before the reconciler may take it over. 30 s: longer than the
     * slowest bank reply we wait for (BANK_TIMEOUT_MS) plus the completion, so a live request is never
     * taken over while it can still finish.
     */
    LEASE_MS: intFrom(1000, 3_600_000).default(30_000),
    /** How long one bank call may take. 8 s: the sandbox's slow switch replies after 5 s. */
    BANK_TIMEOUT_MS: intFrom(100, 120_000).default(8000),
    /** Window in which the reconciler re-drives a top-up that may never have reached the bank. */
    REDRIVE_WINDOW_S: intFrom(1, 7 * 24 * 3600).default(600),
    /** Reconciler timer inside `npm run demo`; 0 turns it off. */
    RECONCILE_INTERVAL_MS: intFrom(0, 3_600_000).default(10_000),
    /** Contract: 5, 50 and UTC (section 6). */
    REWARD_AMOUNT_MINOR: intFrom(1, 1_000_000).default(5),
    REWARD_DAILY_CAP_MINOR: intFrom(1, 1_000_000_000).default(50),
    REWARD_TZ: z
      .string()
      .default("UTC")
      .refine((tz) => {
        try {
          new Intl.DateTimeFormat("en-CA", { timeZone: tz });
          return true;
        } catch {
          return false;
        }
      }, "must be an IANA time zone such as UTC or Europe/Paris"),
    /**
     * Connections in the app's pg pool, shared by Prisma (through @prisma/adapter-pg) and the ledger's SQL.
     * 20: enough to keep PostgreSQL's 2 cores busy under 50 concurrent debits on one wallet without queueing
     * for long; PostgreSQL's default max_connections (100) leaves room for two app instances and tools.
     */
    DB_POOL_MAX: intFrom(1, 200).default(20),
    /**
     * What sits between the app and PostgreSQL. `none`: a direct connection or a TCP proxy such as HAProxy
     * (session state survives). `transaction`: PgBouncer in transaction pooling, where consecutive transactions
     * of one client run on different server connections, so startup `options` are refused (08P01) and named
     * statements collide (42P05/26000, stack-notes 27): timeouts then go in `SET LOCAL` and role settings, and
     * named statements default to off (docs/decisions/015-failover-and-poolers.md).
     */
    DB_POOLER: z.enum(["none", "transaction"]).default("none"),
    /**
     * Server-side prepared (named) statements on the ledger's hot path. `auto`: on unless DB_POOLER is
     * `transaction`. `on` behind a transaction pooler breaks every query (the PgBouncer test's negative control).
     */
    DB_NAMED_STATEMENTS: z.enum(["auto", "on", "off"]).default("auto"),
    /**
     * Longest one statement may run, in ms. 15 s: a stuck lock surfaces as an error instead of a hung request,
     * and it is far above the slowest statement of this schema (a few ms).
     */
    DB_STATEMENT_TIMEOUT_MS: intFrom(100, 600_000).default(15_000),
    /** A session idle inside a transaction longer than this is killed, in ms, so no crash holds row locks. */
    DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: intFrom(100, 600_000).default(10_000),
    /**
     * How long a transaction that lost its connection (failover: connection errors, 57P01, 57P03, 25006) is
     * retried as a whole, in ms. 20 s: the measured write outage of a lost primary behind Patroni and HAProxy is
     * ~11 s (stack-notes 26, docs/scaling.md), plus ~3 s for HAProxy to see the new primary, plus margin; it
     * stays below the 30 s a browser or SDK typically waits. 0 turns the failover retry off.
     */
    DB_FAILOVER_RETRY_MS: intFrom(0, 120_000).default(20_000),
    /**
     * Redis Cluster seed nodes, comma-separated `host:port` (e.g. `127.0.0.1:7000,127.0.0.1:7001`). When set,
     * the app uses an ioredis Cluster client instead of REDIS_URL.
     */
    REDIS_CLUSTER_NODES: z.preprocess(
      (v) => (v === "" ? undefined : v),
      z
        .string()
        .regex(/^[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*$/, "must be host:port[,host:port...]")
        .optional(),
    ),
    /** Largest request body accepted, in bytes. 16 KiB is far above any valid body of this API. */
    BODY_LIMIT_BYTES: intFrom(256, 1_048_576).default(16_384),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  })
  .transform((raw) => {
    const bankPort = raw.BANK_PORT ?? raw.PORT + 1;
    return {
      ...raw,
      BANK_PORT: bankPort,
      BANK_URL: raw.BANK_URL ?? `http://127.0.0.1:${bankPort}`,
      APP_URL: raw.APP_URL ?? `http://127.0.0.1:${raw.PORT}`,
      webhookSecrets: raw.BANK_WEBHOOK_SECRETS.split(",")
        .map((s) => s.trim())
        .filter((s) => s.length > 0),
    };
  });

export type Env = z.infer<typeof schema>;

export class EnvError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid environment:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "EnvError";
  }
}

/**
 * Parses an environment. `source` is a plain map of strings (defaults to `process.env`).
 * Returns the typed settings; throws {@link EnvError} listing every invalid variable.
 */
export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  const result = schema.safeParse(source);
  if (!result.success) {
    throw new EnvError(result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`));
  }
  return result.data;
}

let cached: Env | undefined;

/** The process's validated settings, parsed on first use. Throws {@link EnvError} when invalid. */
export function env(): Env {
  cached ??= parseEnv();
  return cached;
}
