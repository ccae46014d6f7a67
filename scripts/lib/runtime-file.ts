/**
 * `.data/runtime.json`: how CLIs find a running demo (contract section 4). Written by `npm run demo`,
 * removed when it stops. Shape: `{ databaseUrl, redisUrl, bankUrl, appUrl, pid, webhookSecret, authSecret }`
 * (contract sections 4 and 9); mode 0600, since it holds connection URLs and secrets.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

export interface RuntimeInfo {
  databaseUrl: string;
  redisUrl: string | null;
  bankUrl: string;
  appUrl: string;
  pid: number;
  /** The bank's signing secret (`BANK_WEBHOOK_SECRETS` of the demo): local tools sign test events with it. */
  webhookSecret: string;
  /** The app's session-signing secret (`BETTER_AUTH_SECRET` of the demo). */
  authSecret: string;
}

/** Absolute path of the runtime file for the project rooted at `root` (default: the current directory). */
export function runtimeFilePath(root: string = process.cwd()): string {
  return join(root, ".data", "runtime.json");
}

/** Writes the runtime file (mode 0600, also when it existed with another mode: it holds URLs and secrets). */
export function writeRuntimeInfo(info: RuntimeInfo, root?: string): void {
  const file = runtimeFilePath(root);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** Removes the runtime file if it exists. */
export function removeRuntimeInfo(root?: string): void {
  rmSync(runtimeFilePath(root), { force: true });
}

/** Reads the runtime file; null when it is missing or unreadable. */
function readRuntimeInfo(root?: string): RuntimeInfo | null {
  const file = runtimeFilePath(root);
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as RuntimeInfo;
  } catch {
    return null;
  }
}

/**
 * Points a CLI at the database: `DATABASE_URL` if set, else the running demo's runtime file (and its Redis,
 * bank and app URLs, copied into `process.env` when those are unset). When neither exists, prints
 * "no running demo" and exits with code 2 (contract section 4).
 */
export function resolveCliEnvironment(root?: string): void {
  if (process.env.DATABASE_URL) return;
  const info = readRuntimeInfo(root);
  if (!info) {
    process.stderr.write("no running demo: start one with `npm run demo`, or set DATABASE_URL\n");
    process.exit(2);
  }
  process.env.DATABASE_URL = info.databaseUrl;
  if (info.redisUrl && !process.env.REDIS_URL) process.env.REDIS_URL = info.redisUrl;
  if (!process.env.BANK_URL) process.env.BANK_URL = info.bankUrl;
  if (!process.env.APP_URL) process.env.APP_URL = info.appUrl;
  if (info.authSecret && !process.env.BETTER_AUTH_SECRET) process.env.BETTER_AUTH_SECRET = info.authSecret;
}
