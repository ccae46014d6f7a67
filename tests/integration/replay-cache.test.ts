/**
 * The Redis copy of stored responses: replays served from it are byte-identical to the
 * ledger's, and behaviour is unchanged with Redis flushed, holding garbage, or down. Real PostgreSQL and a real
 * redis-server of this file's own (it is flushed and stopped here).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Redis from "ioredis";
import { startRedisServer, type RedisServer } from "../../scripts/lib/redis-server";
import {
  cachedOutcomeOf,
  cacheStoredResponse,
  REPLAY_CACHE_TTL_S,
  readCachedReplay,
  replayCacheKey,
} from "../../lib/ledger/replay-cache";
import { insertClaimOrLose } from "../../lib/ledger/claim";
import { runClaimedOperation } from "../../lib/ledger/claim-runner";
import { storeResponse } from "../../lib/ledger/transitions";
import { createTestUser, testPool } from "../helpers/db";
import { claimEntry, claimRequest } from "../helpers/ledger";

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedisServer({});
  client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  client.on("error", () => {});
  await client.connect();
});

afterAll(async () => {
  client.disconnect();
  await server.stop();
});

/** A claimed row with a stored response, as a finished operation leaves it. */
async function finishedOperation() {
  const user = await createTestUser();
  const request = claimRequest(user.id);
  const claimed = await claimEntry(request);
  const response = { status: 201, body: `{"topup":{"refId":"${request.key.refId}","amount":1000}}` };
  await storeResponse({ userId: user.id, entryId: claimed.id }, response);
  return { request, response, entryId: claimed.id };
}

describe("replay cache", () => {
  it("a copy replays the stored status and body byte for byte; other parameters are a mismatch with the fields", async () => {
    const { request, response } = await finishedOperation();
    await cacheStoredResponse(request.key, request.params, response, client);
    expect(await readCachedReplay(request.key, request.params, client)).toEqual({ kind: "replay", response });
    expect(await readCachedReplay(request.key, { amount: 5, currency: "USD" }, client)).toEqual({
      kind: "mismatch",
      fields: ["amount"],
    });
  });

  it("the copy really answers: with the ledger's body changed behind its back, the copy's bytes come back (test-only tampering)", async () => {
    const { request, response, entryId } = await finishedOperation();
    await cacheStoredResponse(request.key, request.params, response, client);
    await testPool().query("UPDATE ledger_entries SET response_body = 'tampered' WHERE user_id = $1 AND id = $2", [
      request.key.userId,
      entryId,
    ]);
    expect(await readCachedReplay(request.key, request.params, client)).toEqual({ kind: "replay", response });
  });

  it("flushed: no copy, the caller falls back to the ledger, which still replays the same bytes", async () => {
    const { request, response } = await finishedOperation();
    await cacheStoredResponse(request.key, request.params, response, client);
    await client.flushall();
    expect(await readCachedReplay(request.key, request.params, client)).toBeNull();
    const fromLedger = await runClaimedOperation<null>({
      key: request.key,
      params: request.params,
      replayCopy: "read_by_caller",
      attempt: async ({ leaseOwner }) =>
        (await insertClaimOrLose(testPool(), { ...request, leaseOwner }))
          ? { kind: "decided", response: null, detail: null }
          : { kind: "lost" },
    });
    expect(fromLedger).toMatchObject({ kind: "existing", outcome: { kind: "replay", response } });
  });

  it("garbage at the key is ignored, never replayed: each field of the record is checked", async () => {
    const { request } = await finishedOperation();
    const { fingerprint } = await import("../../lib/ledger/fingerprint");
    const valid = { f: fingerprint(request.key.type, request.params), p: request.params, s: 201, b: "{}" };
    const garbage = [
      "not json",
      "null",
      "5",
      '"text"',
      "{}",
      JSON.stringify({ ...valid, f: 1 }),
      JSON.stringify({ ...valid, b: 1 }),
      JSON.stringify({ ...valid, s: "201" }),
      JSON.stringify({ ...valid, s: 201.5 }),
      JSON.stringify({ ...valid, s: 99 }),
      JSON.stringify({ ...valid, s: 600 }),
      JSON.stringify({ ...valid, p: null }),
      JSON.stringify({ ...valid, p: "x" }),
    ];
    for (const value of garbage) {
      await client.set(replayCacheKey(request.key), value);
      expect(await readCachedReplay(request.key, request.params, client), value).toBeNull();
      // The same reading for a copy read by a script of the caller's: null, never a throw.
      expect(cachedOutcomeOf(request.key, request.params, value), value).toBeNull();
    }
    for (const status of [100, 599]) {
      await client.set(replayCacheKey(request.key), JSON.stringify({ ...valid, s: status }));
      expect(await readCachedReplay(request.key, request.params, client)).toEqual({
        kind: "replay",
        response: { status, body: "{}" },
      });
    }
  });

  it("a key holding another Redis type (the read itself fails): null, never a throw", async () => {
    const { request } = await finishedOperation();
    await client.del(replayCacheKey(request.key));
    await client.sadd(replayCacheKey(request.key), "not a string");
    expect(await readCachedReplay(request.key, request.params, client)).toBeNull();
  });

  it("no client, or a client that is not connected: null, and writing is a silent no-op", async () => {
    const { request, response } = await finishedOperation();
    expect(await readCachedReplay(request.key, request.params, null)).toBeNull();
    const down = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    down.on("error", () => {});
    await expect(cacheStoredResponse(request.key, request.params, response, down)).resolves.toBeUndefined();
    expect(await readCachedReplay(request.key, request.params, down)).toBeNull();
    down.disconnect();
  });

  it("a copy expires after REPLAY_CACHE_TTL_S (24 h), so an old replay reads the ledger again", async () => {
    const { request, response } = await finishedOperation();
    await cacheStoredResponse(request.key, request.params, response, client);
    const ttlS = await client.ttl(replayCacheKey(request.key));
    expect(REPLAY_CACHE_TTL_S).toBe(86_400);
    expect(ttlS).toBeGreaterThan(REPLAY_CACHE_TTL_S - 60);
    expect(ttlS).toBeLessThanOrEqual(REPLAY_CACHE_TTL_S);
  });

  it("writing connects a lazy client that has not connected yet; reading never waits for a client that is not ready", async () => {
    const { request, response } = await finishedOperation();
    const lazy = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    lazy.on("error", () => {});
    try {
      expect(lazy.status).toBe("wait");
      await cacheStoredResponse(request.key, request.params, response, lazy);
      expect(lazy.status).toBe("ready");
      expect(await readCachedReplay(request.key, request.params, client)).toEqual({ kind: "replay", response });
    } finally {
      lazy.disconnect();
    }
    // A client that queues commands until it connects: a read must not connect it and wait, it answers null.
    const queued = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    queued.on("error", () => {});
    try {
      expect(await readCachedReplay(request.key, request.params, queued)).toBeNull();
      expect(queued.status).toBe("wait");
    } finally {
      queued.disconnect();
    }
  });

  it("keys carry the user as a Redis Cluster hash tag", () => {
    expect(replayCacheKey({ userId: "u1", type: "payment", refId: "o-1" })).toBe("replay:{u1}:payment:o-1");
  });
});
