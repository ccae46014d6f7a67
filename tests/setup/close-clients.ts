/**
 * Setup file of the integration and http projects: after each test file, closes the clients it opened, so no file
 * writes its own `afterAll` for them: the test pool of tests/helpers/db.ts, and lib/db's pool and Prisma client and
 * lib/redis's client. It runs after the file's own `afterAll` hooks (vitest runs hooks as a stack: this one was
 * registered first), so those may still use the database.
 *
 * lib/db and lib/redis keep their clients on `globalThis`; they are imported here only when the file opened one,
 * because importing lib/db installs pg's BIGINT parser, which a file that never loaded it must not get.
 */
import { afterAll } from "vitest";
import { closeTestPool } from "../helpers/db";

/** The `globalThis` keys of lib/db.ts and lib/redis.ts. */
const DB_CLIENTS = Symbol.for("wallet.db.clients");
const REDIS_CLIENT = Symbol.for("wallet.redis.client");

afterAll(async () => {
  const opened = globalThis as Record<symbol, unknown>;
  await Promise.all([
    closeTestPool(),
    opened[DB_CLIENTS] === undefined ? null : import("../../lib/db").then(({ closeDb }) => closeDb()),
    opened[REDIS_CLIENT] === undefined ? null : import("../../lib/redis").then(({ closeRedis }) => closeRedis()),
  ]);
});
