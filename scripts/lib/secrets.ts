/**
 * Secrets of the stacks this project starts (contract section 9, case C16): never a value published in this
 * repository. Every test, storm and bench stack makes its own with {@link randomWebhookSecret} and
 * {@link randomAuthSecret}; the demo's are generated once per data folder and kept in `<data folder>/secrets.json`
 * (mode 0600), so that sign-ins survive a restart of the demo. Two fresh data folders get two different sets.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { secretProblems } from "../../lib/env";

/** A fresh webhook signing secret: `whsec_` and 32 random bytes in hex (at least 32 bytes, contract section 9). */
export function randomWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("hex")}`;
}

/** A fresh session-signing secret (BETTER_AUTH_SECRET): 32 random bytes in hex. */
export function randomAuthSecret(): string {
  return randomBytes(32).toString("hex");
}

export interface DemoSecrets {
  /** The bank's signing secret and the app's verifying secret (`BANK_WEBHOOK_SECRETS`). */
  readonly webhookSecret: string;
  /** The session-signing secret (`BETTER_AUTH_SECRET`). */
  readonly authSecret: string;
}

const secretsSchema = z.object({ webhookSecret: z.string(), authSecret: z.string() });

/** The file that holds a data folder's secrets. */
export function demoSecretsFile(dataDir: string): string {
  return join(dataDir, "secrets.json");
}

/**
 * Returns the secrets of `dataDir` (an absolute folder, created if needed): read from its `secrets.json`, or,
 * the first time, 32 random bytes each (`whsec_<hex>` and `<hex>`) written there with mode 0600.
 * Throws when the file exists but does not hold two usable secrets (it is never silently replaced: delete it to
 * start over).
 */
export function demoSecrets(dataDir: string): DemoSecrets {
  const file = demoSecretsFile(dataDir);
  if (existsSync(file)) {
    const parsed = secretsSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    const problems = parsed.success
      ? secretProblems({ BANK_WEBHOOK_SECRETS: parsed.data.webhookSecret, BETTER_AUTH_SECRET: parsed.data.authSecret })
      : ["it is not { webhookSecret, authSecret }"];
    if (!parsed.success || problems.length > 0) {
      throw new Error(`${file} does not hold usable secrets (${problems.join("; ")}): delete it to generate new ones`);
    }
    chmodSync(file, 0o600);
    return parsed.data;
  }
  mkdirSync(dataDir, { recursive: true });
  const secrets: DemoSecrets = { webhookSecret: randomWebhookSecret(), authSecret: randomAuthSecret() };
  // `wx`: never overwrite a file another demo created in the meantime; mode 0600: only this user reads secrets.
  writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600, flag: "wx" });
  return secrets;
}
