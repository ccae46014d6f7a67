/**
 * The better-auth instance: email + password accounts, database sessions in the `"session"` table, on the
 * process's shared `pg.Pool` (docs/development.md note 18). Created on first use, so importing this module (for example
 * during `next build`) opens no connection and reads no setting.
 *
 * Choices, with their reasons:
 * - Passwords are hashed with argon2id (@node-rs/argon2) at OWASP's recommended parameters.
 * - `role` is a user field that sign-up can never set (`input: false`); admins are made by `npm run users`.
 * - No cookie cache: with it, a replayed cookie stayed valid after sign-out and role changes lagged
 *   (docs/development.md note 18). Every session read is one SELECT: the session joined to its user (`advanced.database.joins`),
 *   and no write except the once-a-day extension (`updateAge`).
 * - better-auth's own rate limiter is off: it only sees HTTP requests to `/api/auth/*`, its database store
 *   prunes rows after 60 s (an hour cannot live there) and writes a row per request. The throttles of contract
 *   section 9 run in `hooks.before`/`hooks.after` instead (lib/limits/auth-throttles.ts), so they cover
 *   `auth.api.*` calls from server actions as well as HTTP, in Redis with real windows.
 * - `hooks.before` also applies the app's account-field rules to every endpoint that creates or changes an
 *   account (./credential-fields.ts), so the library's own endpoints cannot store a 1,000,000-character name.
 * - The client address better-auth records on sessions is the one lib/http/client-address.ts resolved, never a
 *   client-chosen `X-Forwarded-For`.
 * - Mail (address check, password reset) is queued in the outbox and sent after the request by the mail worker
 *   (docs/decisions/054-mail-outbox.md): better-auth's own flows and tokens, our delivery.
 * - `nextCookies()` is the last plugin, so server actions that sign in or out set the cookie on the response.
 */
import { betterAuth, APIError } from "better-auth";
import { createAuthMiddleware } from "better-auth/api";
import { nextCookies } from "better-auth/next-js";
import { randomBytes } from "node:crypto";
import { hash as argon2Hash, verify as argon2Verify, type Algorithm } from "@node-rs/argon2";
import type { Pool } from "pg";
import { env } from "../env";
import { pool } from "../db";
import { CLIENT_ADDRESS_HEADER, clientAddressFrom } from "../http/client-address";
import { appOrigins } from "../http/same-origin";
import {
  beginPasswordAttempt,
  countMailRequest,
  countSignUp,
  finishPasswordAttempt,
  type PasswordAttempt,
} from "../limits/auth-throttles";
import {
  ADDRESS_CHECK_VALID_HOURS,
  afterPasswordReset,
  PASSWORD_RESET_VALID_MINUTES,
  queueAddressCheck,
  queuePasswordReset,
} from "../mail/account-mail";
import { accountFieldsProblem, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./credential-fields";

// @node-rs/argon2's Algorithm is an ambient const enum, which isolatedModules cannot read; 2 is Argon2id.
const ARGON2ID: Algorithm = 2;

/**
 * argon2id parameters: OWASP Password Storage Cheat Sheet's first recommended setting, m = 19 MiB, t = 2, p = 1
 * (also @node-rs/argon2's defaults, spelled out so a library upgrade cannot change them silently).
 * About 7 ms per hash on this project's machines (docs/development.md note 18). `verify` reads the parameters from the
 * stored hash, so raising them later keeps old hashes valid.
 */
const ARGON2_OPTIONS = {
  algorithm: ARGON2ID,
  memoryCost: 19_456, // KiB
  timeCost: 2, // passes
  parallelism: 1, // lanes
};

/**
 * How long a session lasts, in seconds: 7 days (better-auth's default, spelled out). A session older than a
 * day is extended on its next use (`updateAge`), which is at most one write per session per day.
 */
export const SESSION_EXPIRES_IN_S = 7 * 24 * 3600;
const SESSION_UPDATE_AGE_S = 24 * 3600;

/**
 * The session-signing secret: BETTER_AUTH_SECRET. The server never runs without a valid one (instrumentation.ts
 * refuses to start, contract section 9); a CLI or a test that only creates users may run without it, and then gets
 * a random secret of its own process, which signs nothing anyone else accepts. Never a published default.
 */
let processSecret: string | undefined;
function sessionSecret(): string {
  const configured = env().BETTER_AUTH_SECRET;
  if (configured) return configured;
  processSecret ??= randomBytes(32).toString("hex");
  return processSecret;
}

/**
 * The password attempt a sign-in's `before` hook counted, for its `after` hook: keyed by the dispatch's context
 * object, which better-auth hands to both hooks of one call (better-auth/dist/api/dispatch.mjs).
 */
const passwordAttempts = new WeakMap<object, PasswordAttempt>();

/** The endpoints a throttle counts (contract section 9; the mail requests: docs/decisions/054-mail-outbox.md). */
const THROTTLED_PATHS = new Set([
  "/sign-in/email",
  "/sign-up/email",
  "/request-password-reset",
  "/send-verification-email",
]);

/** The 429 every throttle answers with; `code` is the contract's problem code (section 9). */
function throttled(retryAfterS: number, message: string): APIError {
  return new APIError(
    "TOO_MANY_REQUESTS",
    { code: "rate_limited", message: `${message} Try again in ${retryAfterS} s.` },
    { "Retry-After": String(retryAfterS) },
  );
}

/**
 * better-auth's hooks: the account-field rules before every endpoint that creates or changes an account, and the
 * throttles of contract section 9 (and of the mail requests, decision 054) around the endpoints they count.
 */
function authHooks() {
  return {
    before: createAuthMiddleware(async (ctx) => {
      const problem = accountFieldsProblem(ctx.path, ctx.body);
      if (problem) throw new APIError("BAD_REQUEST", { ...problem });
      if (!THROTTLED_PATHS.has(ctx.path)) return;
      // null outside the app server (CLIs, tests calling lib/): no network client, no per-address limit.
      const address = clientAddressFrom(ctx.headers ?? new Headers());
      if (address === null) return;
      if (ctx.path === "/request-password-reset" || ctx.path === "/send-verification-email") {
        const email: unknown = ctx.body?.email;
        if (typeof email !== "string") return;
        const decision = await countMailRequest(email, address);
        if (!decision.allowed) throw throttled(decision.retryAfterS, "Too many requests for mail.");
        return;
      }
      if (ctx.path === "/sign-in/email") {
        const email: unknown = ctx.body?.email;
        // A body without an email string is refused by the endpoint's own validation right after this hook.
        if (typeof email !== "string") return;
        const decision = await beginPasswordAttempt(email, address);
        if (!decision.allowed) throw throttled(decision.retryAfterS, "Too many sign-in attempts.");
        passwordAttempts.set(ctx.context, decision.attempt);
      } else {
        const decision = await countSignUp(address);
        if (!decision.allowed) throw throttled(decision.retryAfterS, "Too many sign-ups from this address.");
      }
    }),
    after: createAuthMiddleware(async (ctx) => {
      if (ctx.path !== "/sign-in/email") return;
      const attempt = passwordAttempts.get(ctx.context);
      if (!attempt) return;
      passwordAttempts.delete(ctx.context);
      // newSession is set only when the password was right and a session was created.
      await finishPasswordAttempt(attempt, Boolean(ctx.context.newSession));
    }),
  };
}

function createAuth(database: Pool) {
  const { APP_URL } = env();
  return betterAuth({
    appName: "Wallet",
    baseURL: APP_URL,
    basePath: "/api/auth",
    secret: sessionSecret(),
    // The app is reached by APP_URL and, in development and the demo, by both loopback names of PORT.
    trustedOrigins: appOrigins(),
    database,
    emailAndPassword: {
      enabled: true,
      minPasswordLength: PASSWORD_MIN_LENGTH,
      maxPasswordLength: PASSWORD_MAX_LENGTH,
      autoSignIn: true,
      password: {
        hash: (password) => argon2Hash(password, ARGON2_OPTIONS),
        verify: ({ hash, password }) => argon2Verify(hash, password),
      },
      // "Forgot password" is better-auth's own flow: a single-use token, stored hashed by better-auth, valid 1 hour,
      // mailed through the outbox; a reset signs every session out and revokes API tokens (lib/mail/account-mail.ts).
      sendResetPassword: ({ user, url, token }) => queuePasswordReset({ userId: user.id, url, token }),
      resetPasswordTokenExpiresIn: PASSWORD_RESET_VALID_MINUTES * 60,
      revokeSessionsOnPasswordReset: true,
      onPasswordReset: ({ user }) => afterPasswordReset(user.id),
    },
    // Sign-up sends an address check (better-auth's verification link, 24 hours); signing in does not wait for it.
    emailVerification: {
      sendOnSignUp: true,
      expiresIn: ADDRESS_CHECK_VALID_HOURS * 3600,
      sendVerificationEmail: ({ user, url, token }) => queueAddressCheck({ userId: user.id, url, token }),
    },
    user: {
      additionalFields: {
        // Matches the column's CHECK ('user' | 'admin'). `input: false`: a sign-up body's `role` is replaced
        // by the default, never stored.
        role: { type: "string", required: false, defaultValue: "user", input: false },
      },
    },
    session: {
      expiresIn: SESSION_EXPIRES_IN_S,
      updateAge: SESSION_UPDATE_AGE_S,
      cookieCache: { enabled: false },
    },
    rateLimit: { enabled: false },
    advanced: {
      ipAddress: { ipAddressHeaders: [CLIENT_ADDRESS_HEADER] },
      // A session read is one SELECT of the session joined to its user, not a SELECT each (better-auth's default
      // without native joins): authentication on the hot path is a single indexed lookup.
      database: { joins: true },
    },
    hooks: authHooks(),
    plugins: [nextCookies()],
  });
}

/** The better-auth instance's type, with this project's `role` field. */
export type Auth = ReturnType<typeof createAuth>;

const globalKey = Symbol.for("wallet.auth.instance");
type GlobalWithAuth = typeof globalThis & { [globalKey]?: { pool: Pool; auth: Auth } };

/**
 * The process's better-auth instance, created on first call and kept across dev reloads. It is bound to the
 * current `pool()`: after `closeDb()` (CLIs, tests) the next call builds a new instance on the new pool instead
 * of using the ended one. Creating the pool opens no connection until the first query.
 * Throws when settings are invalid or DATABASE_URL is unset.
 */
export function auth(): Auth {
  const g = globalThis as GlobalWithAuth;
  const current = pool();
  const cached = g[globalKey];
  if (cached && cached.pool === current) return cached.auth;
  const created = createAuth(current);
  g[globalKey] = { pool: current, auth: created };
  return created;
}
