/**
 * The sandbox bank's settings, validated once with zod at start-up (docs/bank-sandbox.md lists every one).
 * The bank is a separate service, so it has its own settings module instead of the app's lib/env.ts; the shared
 * names (`PORT`, `BANK_PORT`, `APP_URL`) have the same defaults as there (contract section 4), and
 * `BANK_WEBHOOK_SECRETS` has none: it is checked by the app's own secret rule (lib/env.ts `secretProblems`,
 * contract section 9), so the sandbox never signs with a missing, short or published secret.
 */
import { z } from "zod";
import { secretProblems, splitSecrets } from "../lib/env";

/** Empty strings count as unset, so `FOO=` in a shell or .env file means "use the default". */
const unsetIfEmpty = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);
const intFrom = (min: number, max: number) =>
  z.preprocess(unsetIfEmpty, z.coerce.number().int().min(min).max(max).optional());
const rate = () => z.preprocess(unsetIfEmpty, z.coerce.number().min(0).max(1).default(0));
const flag = () => z.preprocess(unsetIfEmpty, z.stringbool().default(false));

const schema = z
  .object({
    /** Contract section 4: 3000. Only used to derive the defaults below. */
    PORT: intFrom(1, 65535),
    /** Contract section 4: PORT + 1. 0 asks the OS for a free port (tests); the bound port is logged. */
    BANK_PORT: intFrom(0, 65535),
    /**
     * Interface to listen on. Default 127.0.0.1: the sandbox (and its `/_sandbox` controls) is a local tool and
     * must not be reachable from the network.
     */
    BANK_HOST: z.preprocess(unsetIfEmpty, z.string().default("127.0.0.1")),
    /** Contract section 4: http://127.0.0.1:$PORT. Webhooks go to `${APP_URL}/api/v1/bank/webhook`. */
    APP_URL: z.preprocess(unsetIfEmpty, z.url().optional()),
    /** Comma-separated; every secret signs (one `v1=` each) during rotation. Required (contract section 9). */
    BANK_WEBHOOK_SECRETS: z.preprocess(unsetIfEmpty, z.string().optional()),
    /** Where the bank keeps its state across restarts (written atomically). */
    BANK_STATE_FILE: z.preprocess(unsetIfEmpty, z.string().default(".data/bank-state.json")),

    /** Global fault rates, each a probability 0..1 drawn per new charge (default 0: no faults). */
    BANK_FAULT_DECLINE_RATE: rate(),
    BANK_FAULT_SLOW_RATE: rate(),
    BANK_FAULT_LOST_RATE: rate(),
    BANK_FAULT_DUP_RATE: rate(),
    BANK_FAULT_REORDER_RATE: rate(),
    BANK_FAULT_NOHOOK_RATE: rate(),
    /** Global payout fault rates (docs/bank-sandbox.md "Payouts"), each a probability 0..1 drawn per new payout. */
    BANK_PAYOUT_FAULT_FAIL_RATE: rate(),
    BANK_PAYOUT_FAULT_SLOW_RATE: rate(),
    BANK_PAYOUT_FAULT_LOST_RATE: rate(),
    BANK_PAYOUT_FAULT_DUP_RATE: rate(),
    BANK_PAYOUT_FAULT_REORDER_RATE: rate(),
    BANK_PAYOUT_FAULT_NOHOOK_RATE: rate(),
    /**
     * How long after a payout is paid the return switch (`sbx-po-return-`) returns it. 3 s: "a few seconds later",
     * long enough for the app to have booked the payment before the return arrives.
     */
    BANK_PAYOUT_RETURN_DELAY_MS: intFrom(0, 3_600_000),
    /** Seed for the fault draws, so a storm with rates is reproducible. Unset: a random seed (logged). */
    BANK_FAULT_SEED: intFrom(0, 2 ** 32 - 1),

    /** 1: answer `succeeded` at once (still sending the webhook). Default 0: answer `pending`, like real providers. */
    BANK_SYNC_SUCCESS: flag(),
    /** How long after a charge its outcome is settled and its webhook sent. 200 ms: "shortly after", like a provider. */
    BANK_WEBHOOK_DELAY_MS: intFrom(0, 3_600_000),
    /** First retry back-off. 1 s: a restarting app is usually back within seconds. */
    BANK_WEBHOOK_RETRY_BASE_MS: intFrom(1, 3_600_000),
    /** Back-off ceiling. 60 s keeps a demo converging within minutes (8 attempts span at most about 2 minutes). */
    BANK_WEBHOOK_RETRY_MAX_MS: intFrom(1, 24 * 3_600_000),
    /** Attempts per delivery before giving up (the reconciler covers the rest). 8: the brief's bound. */
    BANK_WEBHOOK_MAX_ATTEMPTS: intFrom(1, 100),
    /** Budget of one delivery attempt. 5 s: the app's webhook does one short transaction. */
    BANK_WEBHOOK_TIMEOUT_MS: intFrom(50, 120_000),
    /** Deliveries in flight at once. 8: enough to keep up with a storm without flooding a 2-core app. */
    BANK_WEBHOOK_CONCURRENCY: intFrom(1, 256),
    /** Finished deliveries kept for `/_sandbox/deliveries` (pending ones are always kept). */
    BANK_DELIVERY_HISTORY_MAX: intFrom(0, 1_000_000),
    /** Contract section 5: the slow switch replies after 5 s. */
    BANK_SLOW_MS: intFrom(0, 600_000),
    /** On SIGTERM, how long in-flight requests may finish before their connections are closed. */
    BANK_SHUTDOWN_GRACE_MS: intFrom(0, 600_000),
    BANK_LOG_LEVEL: z.preprocess(
      unsetIfEmpty,
      z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    ),
  })
  .transform((raw) => {
    const appPort = raw.PORT ?? 3000;
    const appUrl = (raw.APP_URL ?? `http://127.0.0.1:${appPort}`).replace(/\/+$/, "");
    const webhookSecrets = splitSecrets(raw.BANK_WEBHOOK_SECRETS);
    return {
      host: raw.BANK_HOST,
      port: raw.BANK_PORT ?? appPort + 1,
      appUrl,
      webhookUrl: `${appUrl}/api/v1/bank/webhook`,
      webhookSecrets,
      stateFile: raw.BANK_STATE_FILE,
      faultRates: {
        decline: raw.BANK_FAULT_DECLINE_RATE,
        slow: raw.BANK_FAULT_SLOW_RATE,
        lost: raw.BANK_FAULT_LOST_RATE,
        dup: raw.BANK_FAULT_DUP_RATE,
        reorder: raw.BANK_FAULT_REORDER_RATE,
        nohook: raw.BANK_FAULT_NOHOOK_RATE,
      },
      payoutFaultRates: {
        fail: raw.BANK_PAYOUT_FAULT_FAIL_RATE,
        slow: raw.BANK_PAYOUT_FAULT_SLOW_RATE,
        lost: raw.BANK_PAYOUT_FAULT_LOST_RATE,
        dup: raw.BANK_PAYOUT_FAULT_DUP_RATE,
        reorder: raw.BANK_PAYOUT_FAULT_REORDER_RATE,
        nohook: raw.BANK_PAYOUT_FAULT_NOHOOK_RATE,
      },
      payoutReturnDelayMs: raw.BANK_PAYOUT_RETURN_DELAY_MS ?? 3000,
      faultSeed: raw.BANK_FAULT_SEED,
      syncSuccess: raw.BANK_SYNC_SUCCESS,
      webhookDelayMs: raw.BANK_WEBHOOK_DELAY_MS ?? 200,
      retryBaseMs: raw.BANK_WEBHOOK_RETRY_BASE_MS ?? 1000,
      retryMaxMs: raw.BANK_WEBHOOK_RETRY_MAX_MS ?? 60_000,
      maxAttempts: raw.BANK_WEBHOOK_MAX_ATTEMPTS ?? 8,
      attemptTimeoutMs: raw.BANK_WEBHOOK_TIMEOUT_MS ?? 5000,
      deliveryConcurrency: raw.BANK_WEBHOOK_CONCURRENCY ?? 8,
      // 1000 finished deliveries (~1 KB each) is a useful window for debugging at ~1 MB of state.
      deliveryHistoryMax: raw.BANK_DELIVERY_HISTORY_MAX ?? 1000,
      slowMs: raw.BANK_SLOW_MS ?? 5000,
      // 2 s: every normal request finishes in milliseconds; a slow-switch reply still sleeping is dropped,
      // which the protocol already allows (the charge exists and is visible through GET /charges).
      shutdownGraceMs: raw.BANK_SHUTDOWN_GRACE_MS ?? 2000,
      logLevel: raw.BANK_LOG_LEVEL,
    };
  })
  .superRefine((config, ctx) => {
    if (config.retryMaxMs < config.retryBaseMs) {
      ctx.addIssue({
        code: "custom",
        path: ["BANK_WEBHOOK_RETRY_MAX_MS"],
        message: "must be at least BANK_WEBHOOK_RETRY_BASE_MS",
      });
    }
  });

export type BankConfig = z.infer<typeof schema>;
export type FaultRates = BankConfig["faultRates"];
export type PayoutFaultRates = BankConfig["payoutFaultRates"];

export class BankConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid bank settings:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "BankConfigError";
  }
}

/**
 * Parses the bank's settings from an environment map (default `process.env`).
 *
 * @returns the typed settings with defaults applied (durations in ms, rates 0..1).
 * @throws {@link BankConfigError} listing every invalid variable.
 */
export function parseBankConfig(source: Record<string, string | undefined> = process.env): BankConfig {
  const result = schema.safeParse(source);
  const problems = secretProblems(source, ["BANK_WEBHOOK_SECRETS"]);
  if (!result.success) {
    problems.push(...result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`));
  }
  if (problems.length > 0 || !result.success) throw new BankConfigError(problems);
  return result.data;
}
