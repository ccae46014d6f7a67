/**
 * The one place that reads `process.env`. Every setting is validated with zod once; a bad value fails start-up
 * (and `next build`, which imports this module from next.config.ts) with a readable list of what is wrong.
 * Defaults and units are documented in `.env.example`; the contract (docs/contract.md,
 * section 4) fixes the defaults marked "contract".
 *
 * Secrets have no default (contract section 9, case C16): {@link secretProblems} is the one rule for them, run at
 * server start by next.config.ts (told a server from `next build`, which must work without them, by the phase Next.js
 * passes it, never by an environment variable: case C33) and again by instrumentation.ts, by the sandbox bank's
 * settings, and by any start script that wants to refuse early.
 */
import { z } from "zod";

const intFrom = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** The balance's CHECK in the database: `balance_minor < 2^53` (prisma/migrations/20261129000000_init). */
const BALANCE_CHECK_BOUND_MINOR = 2 ** 53;

/** The entries of a comma-separated secrets list, trimmed, empty ones dropped (`BANK_WEBHOOK_SECRETS`). */
export function splitSecrets(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((secret) => secret.trim())
    .filter((secret) => secret.length > 0);
}
const optionalUrl = z.preprocess((v) => (v === "" ? undefined : v), z.url().optional());

const schema = z
  .object({
    NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
    /** PostgreSQL URL. Unset means "the demo launcher starts an embedded PostgreSQL and sets this for the app". */
    DATABASE_URL: optionalUrl,
    /**
     * A direct PostgreSQL URL for the live-status listener (LISTEN keeps session state, which a transaction pooler
     * drops). Unset: DATABASE_URL, unless DB_POOLER is `transaction`, where the pages then poll instead
     * (docs/decisions/025-live-status-push.md).
     */
    DATABASE_LISTEN_URL: optionalUrl,
    /** Redis URL. Unset means rewards answer 503 cap_store_unavailable (contract section 6). */
    REDIS_URL: optionalUrl,
    /** Contract: 3000. */
    PORT: intFrom(1, 65535).default(3000),
    /**
     * Address `npm start` listens on. 127.0.0.1: reachable only through a reverse proxy on the same host;
     * `0.0.0.0` (or `::`) in a container or behind a load balancer. The demo and `npm run dev` always listen on
     * 127.0.0.1 only.
     */
    HOST: z.union([z.ipv4(), z.ipv6(), z.hostname()]).default("127.0.0.1"),
    /** Contract: PORT + 1. */
    BANK_PORT: intFrom(1, 65535).optional(),
    /** Contract: http://127.0.0.1:$BANK_PORT. */
    BANK_URL: optionalUrl,
    /** Contract: http://127.0.0.1:$PORT. The bank sends its webhooks here. */
    APP_URL: optionalUrl,
    /**
     * Comma-separated; every one is accepted when verifying (secret rotation). No default: the server refuses to
     * start without valid ones ({@link secretProblems}); CLIs and tests that never verify a webhook may omit it.
     */
    BANK_WEBHOOK_SECRETS: z.string().optional(),
    /** Session signing secret for better-auth. No default; checked like the webhook secrets at server start. */
    BETTER_AUTH_SECRET: z.string().optional(),
    /** Contract: 1,000,000 minor units. 2^53 - 1 is the hard ceiling (JSON integers). */
    MAX_AMOUNT_MINOR: intFrom(1, Number.MAX_SAFE_INTEGER).default(1_000_000),
    /**
     * Contract sections 5 and 9: the largest balance a wallet may reach, in minor units (default 10,000,000). A
     * top-up is charged only when its credit fits under it together with the money that may still reach the wallet
     * (unfinished top-ups and refunds, chargebacks not reversed: ledger_pending_credits_minor), and a reward only
     * when it fits; otherwise the row fails with `422 balance_limit_exceeded` (case C15). Money given back (a failed
     * refund, a reversal) is never refused and never passes it (case C27). Money already charged without an
     * admission (an adjustment) is credited even over the ceiling, so together with MAX_AMOUNT_MINOR it must stay
     * below the balance's CHECK (< 2^53): checked at start, below (case C28).
     */
    MAX_BALANCE_MINOR: intFrom(1, 2 ** 52).default(10_000_000),
    /**
     * Contract section 14: the most a user's withdrawals may hold per UTC day, in minor units (default 2,000,000, twice
     * MAX_AMOUNT_MINOR's default). Decided by the payout's claim under the wallet's lock against the day's row in
     * payout_limit_days (raised by the claim, lowered when the bank fails a payout); refused with a stored 422
     * `payout_limit_exceeded`.
     */
    PAYOUT_DAILY_LIMIT_MINOR: intFrom(1, Number.MAX_SAFE_INTEGER).default(2_000_000),
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
    /** Reconciler timer inside `npm run demo`, `npm run dev` and `npm start`; 0 turns it off. */
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
     * statements collide (42P05/26000, docs/development.md note 27): timeouts then go in `SET LOCAL` and role settings,
     * and named statements default to off (docs/decisions/015-failover-and-poolers.md).
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
     * ~11 s (docs/development.md note 26, docs/scaling.md), plus ~3 s for HAProxy to see the new primary, plus margin;
     * it stays below the 30 s a browser or SDK typically waits. 0 turns the failover retry off.
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
    /**
     * Contract section 5: the webhook reads at most this many bytes of a body and answers 413 past it (case C17).
     * 64 KiB: a bank event is a few hundred bytes; the bound is what an unauthenticated sender can make us hold
     * per request before the signature is checked. At most 64 MiB, so that no setting can turn the bound off.
     */
    WEBHOOK_BODY_LIMIT_BYTES: intFrom(1024, 64 * 1_048_576).default(65_536),
    /**
     * How many `X-Forwarded-For` hops to trust (contract section 9). 0: the client's address is the socket's
     * peer and the header is ignored, so a client cannot pick its own address. N: N proxies of yours stand in
     * front of the app, each appending the address it saw; the address N entries back from the peer is the
     * client's. 10 is far above any real chain of proxies.
     */
    TRUSTED_PROXY_HOPS: intFrom(0, 10).default(0),
    /** Contract: 5 accounts created per client address per hour. */
    SIGNUPS_PER_HOUR: intFrom(1, 1_000_000).default(5),
    /** Contract: 60 new operations per user and type per minute (duplicates never count). */
    OPS_PER_MINUTE: intFrom(1, 1_000_000).default(60),
    /** Contract: 20 active personal API tokens per user. */
    TOKENS_PER_USER_MAX: intFrom(1, 1000).default(20),
    /**
     * Contract section 5: failed attempts to settle one top-up (a credit the database refuses, a lost connection)
     * before it is flagged for attention on the admin page. 5: a transient failure clears within a couple of
     * reconciler passes or webhook retries; five in a row mean something a person must look at.
     */
    SETTLE_ATTEMPTS_MAX: intFrom(1, 1000).default(5),
    /**
     * Contract sections 5 and 7.6: a bank charge that succeeded more than this many seconds ago must be credited
     * exactly once (by its top-up or by one adjustment), whatever its row's lease says; the audit lists it otherwise.
     * 300 s: a live top-up is credited within seconds (a slow bank reply of 5 s, webhook retries within about two
     * minutes), so a charge still uncredited after five minutes is not in flight. 0 judges every succeeded charge.
     */
    STUCK_AFTER_S: intFrom(0, 7 * 24 * 3600).default(300),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    /**
     * Bearer token that a Prometheus scraper sends to `GET /api/v1/metrics` (admins can read it without). Unset: admins
     * only. At least 32 characters: it is a secret, compared in constant time.
     */
    METRICS_TOKEN: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(32).optional()),
    /**
     * "1" only when `npm run bench` starts the app for itself (bench/run.ts): then `POST /api/v1/bench/noop`, the
     * framework's floor the bench divides every route by, answers; otherwise that path is a 404 like any unknown one,
     * and the public API description does not list it.
     */
    BENCH_FLOOR_ROUTE: z.enum(["0", "1"]).default("0"),
    /**
     * "1" only in the test stack (scripts/test.ts): then the page `/error-drill` throws, so the browser tests can see
     * the app's error page (app/error.tsx) without breaking a real page. Otherwise that address is the 404 page like any
     * unknown one, and `npm start` refuses to start with it set (scripts/lib/start-checks.ts).
     */
    ERROR_DRILL: z.enum(["0", "1"]).default("0"),
    /**
     * The mail server messages go out through (docs/decisions/054-mail-outbox.md): `smtp://user:password@host:587`
     * (STARTTLS when the server offers it) or `smtps://...:465`. A production server refuses to start without it
     * unless MAIL_DELIVERY is `off`; `npm run demo`, `npm run dev` and the test stack set it to their local mail
     * catcher.
     */
    SMTP_URL: z.preprocess(
      (v) => (v === "" ? undefined : v),
      z
        .url({ protocol: /^smtps?$/, error: "an smtp:// or smtps:// URL" })
        .max(2048)
        .optional(),
    ),
    /** The sender of every message (RFC 5322 `From`). */
    MAIL_FROM: z.string().trim().min(3).max(200).default("Wallet <no-reply@wallet.localhost>"),
    /**
     * `smtp`: this process sends the outbox's mail. `off`: it sends none and touches no outbox row (another process
     * with `smtp` may send them); messages are still queued, so nothing is lost when mail is switched on again.
     */
    MAIL_DELIVERY: z.enum(["smtp", "off"]).default("smtp"),
    /** How often a sending process looks for due mail, in ms. 1 s: a receipt arrives within seconds. */
    MAIL_POLL_MS: intFrom(50, 60_000).default(1000),
    /**
     * V8's old-generation bound of the production server, in MB: `npm start`, the demo and the bench start
     * next-server with `--max-old-space-size=<this>` (scripts/lib/stack.ts `appHeapNodeArgs`; decision 051). 768: a
     * burst of 10,000 requests in flight at once holds ~66 KB each alive (Next's request pipeline, measured), ~650 MB
     * over the ~75 MB the app holds at idle, and fits; 384 and 288 crashed under it. The bound also makes V8 collect
     * sooner, which holds the bench's peak resident set at 300-350 MiB (V8's own default, a quarter of the machine's
     * memory, let it reach 614-785 MiB). 0: V8's default. An operator's own `--max-old-space-size` in NODE_OPTIONS
     * wins over this. At least 128: the app holds ~70 MB alive when idle.
     */
    APP_HEAP_MB: z.coerce
      .number()
      .int()
      .refine((mb) => mb === 0 || (mb >= 128 && mb <= 65_536), "0 (V8's default) or 128..65536")
      .default(768),
  })
  .superRefine((raw, ctx) => {
    // Case C28: the balance's CHECK (balance_minor < 2^53) must leave room above the ceiling for the largest credit
    // that is never refused for it (an adjustment: one charge, at most MAX_AMOUNT_MINOR), so that no amount the
    // settings allow can make the database refuse a settlement again and again.
    if (raw.MAX_BALANCE_MINOR + raw.MAX_AMOUNT_MINOR >= BALANCE_CHECK_BOUND_MINOR)
      ctx.addIssue({
        code: "custom",
        path: ["MAX_BALANCE_MINOR"],
        message:
          `MAX_BALANCE_MINOR (${raw.MAX_BALANCE_MINOR}) + MAX_AMOUNT_MINOR (${raw.MAX_AMOUNT_MINOR}) must be below ` +
          "2^53 (9007199254740992), the bound of a balance in the database: an amount charged past the ceiling " +
          "(an adjustment) must still fit",
      });
  })
  .transform((raw) => {
    const bankPort = raw.BANK_PORT ?? raw.PORT + 1;
    return {
      ...raw,
      BANK_PORT: bankPort,
      BANK_URL: raw.BANK_URL ?? `http://127.0.0.1:${bankPort}`,
      APP_URL: raw.APP_URL ?? `http://127.0.0.1:${raw.PORT}`,
      webhookSecrets: splitSecrets(raw.BANK_WEBHOOK_SECRETS),
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

/**
 * Shortest secret accepted, in bytes (UTF-8): 32 bytes = 256 bits, the output size of the HMAC-SHA256 that signs
 * webhooks and sessions (RFC 2104 section 3: a key shorter than the hash output weakens the MAC). Contract section 9.
 */
export const SECRET_BYTES_MIN = 32;

/**
 * Secret values this repository has ever published (old defaults of lib/env.ts, bank/config.ts, .env.example and
 * of the test, storm and bench stacks). Anyone can read them, so none of them is ever accepted (case C16).
 */
export const PUBLISHED_SECRETS: readonly string[] = [
  "whsec_dev_only_change_me",
  "dev-only-secret-change-me-0123456789abcdef",
  "whsec_test_stack_local_only",
  "extra-app-test-secret-0123456789abcdef0123456789",
];

/** Words of a placeholder that someone copied instead of generating a secret ("change me"). */
const PLACEHOLDER_PATTERN = /change[-_ ]?me/i;

/** The settings that must hold secrets (contract section 9). */
const SECRET_VARIABLES = ["BANK_WEBHOOK_SECRETS", "BETTER_AUTH_SECRET"] as const;
export type SecretVariable = (typeof SECRET_VARIABLES)[number];

/**
 * Checks the secrets of an environment (contract section 9, case C16): each of `names` must be set, and every
 * secret in it (`BANK_WEBHOOK_SECRETS` is a comma-separated list) at least {@link SECRET_BYTES_MIN} bytes long,
 * not one of {@link PUBLISHED_SECRETS}, and not a "change me" placeholder. There is no exemption flag and no mode
 * in which a bad secret passes.
 *
 * `source` is a plain map of strings (default `process.env`). Returns one readable line per problem, each naming
 * its variable (never the secret's value); an empty list when every secret is usable. Never throws.
 */
export function secretProblems(
  source: Record<string, string | undefined> = process.env,
  names: readonly SecretVariable[] = SECRET_VARIABLES,
): string[] {
  const problems: string[] = [];
  for (const name of names) {
    const raw = source[name];
    const secrets = name === "BANK_WEBHOOK_SECRETS" ? splitSecrets(raw) : raw?.trim() ? [raw] : [];
    if (secrets.length === 0) {
      problems.push(`${name} is missing: set it to a random value of at least ${SECRET_BYTES_MIN} bytes`);
      continue;
    }
    secrets.forEach((secret, index) => {
      const which = secrets.length > 1 ? `${name} (secret ${index + 1} of ${secrets.length})` : name;
      if (PUBLISHED_SECRETS.includes(secret) || PLACEHOLDER_PATTERN.test(secret)) {
        problems.push(`${which} is a value published in this repository: generate your own`);
      } else if (Buffer.byteLength(secret, "utf8") < SECRET_BYTES_MIN) {
        problems.push(`${which} is shorter than ${SECRET_BYTES_MIN} bytes`);
      }
    });
  }
  return problems;
}

/**
 * Throws {@link EnvError} listing {@link secretProblems} when any secret is missing, short or published.
 * Called at server start (instrumentation.ts); returns nothing when every secret is usable.
 */
export function assertSecrets(source: Record<string, string | undefined> = process.env): void {
  const problems = secretProblems(source);
  if (problems.length > 0) throw new EnvError(problems);
}

/**
 * What stops a production server from sending mail (docs/decisions/054-mail-outbox.md): `SMTP_URL` unset while
 * `MAIL_DELIVERY` is not `off`. A development server may run without it (its mail waits in the outbox). Returns one
 * line per problem, naming the variable; an empty list otherwise. Never throws.
 */
export function mailProblems(source: Record<string, string | undefined> = process.env): string[] {
  if (source.NODE_ENV !== "production" || source.MAIL_DELIVERY === "off" || source.SMTP_URL?.trim()) return [];
  return [
    "SMTP_URL is missing: set it to your mail server (smtp://user:password@host:587), or set MAIL_DELIVERY=off to " +
      "run without sending mail (messages wait in the outbox)",
  ];
}

/** Next.js's phase names (next/constants): `next build`, `next start`, `next dev`. */
const NEXT_BUILD_PHASE = "phase-production-build";
const NEXT_SERVER_PHASES: readonly string[] = ["phase-production-server", "phase-development-server"];

/**
 * What stops a server from starting (contract section 9, cases C16 and C33), or an empty list.
 *
 * `phase` is what Next.js itself passes to next.config.ts (`phase-production-build` for `next build`,
 * `phase-production-server` for `next start`, `phase-development-server` for `next dev`, ...), or `"server"` from
 * instrumentation.ts, whose `register()` Next.js calls only in a server. Only a server is checked: a build needs no
 * secret. The phase never comes from the environment: `NEXT_PHASE=phase-production-build` in a server's environment
 * is itself a problem, because Next.js would then skip instrumentation.ts (the secrets' second check, the
 * client-address hook of cases C22 and C24) while the server runs. Otherwise the problems are
 * {@link secretProblems} and {@link mailProblems}. Never throws.
 */
export function startProblems(phase: string, source: Record<string, string | undefined> = process.env): string[] {
  if (phase !== "server" && !NEXT_SERVER_PHASES.includes(phase)) return [];
  const problems = [...secretProblems(source), ...mailProblems(source)];
  if (source.NEXT_PHASE === NEXT_BUILD_PHASE) {
    problems.push(
      `NEXT_PHASE is ${NEXT_BUILD_PHASE} in a server's environment: Next.js would skip instrumentation.ts; unset it ` +
        "(next build sets it by itself)",
    );
  }
  return problems;
}

/**
 * The server's start-up refusal (contract section 9, cases C16 and C33). Called by next.config.ts with the phase
 * Next.js passes it (so `next start` and `next dev` are refused before they serve a request, whatever the
 * environment says) and by instrumentation.ts with `"server"`. Returns when {@link startProblems} finds nothing; otherwise writes
 * them to stderr (naming each variable, never a value) and exits the process with code 1, in every mode, with no
 * exemption flag. `source` defaults to `process.env`.
 */
export function refuseUnusableSecrets(phase: string, source: Record<string, string | undefined> = process.env): void {
  const problems = startProblems(phase, source);
  if (problems.length === 0) return;
  process.stderr.write(
    `refusing to start (contract section 9; see .env.example):\n${problems.map((p) => `  - ${p}`).join("\n")}\n`,
  );
  // An exception thrown from register() or next.config.ts is logged by Next.js; exiting is the refusal.
  process.exit(1);
}
