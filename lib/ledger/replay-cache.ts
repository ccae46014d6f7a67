/**
 * A Redis copy of stored first responses, so that hot replays skip PostgreSQL. Safe because a
 * stored response never changes once written (first writer wins, contract section 3) and neither does the
 * row's fingerprint: a copy can be missing, never wrong. Every failure (Redis off, down, slow, flushed, or
 * holding something unreadable) falls back to the ledger, so behaviour is unchanged without Redis; only the
 * cost of a replay differs.
 */
import { redis, type RedisClient } from "../redis";
import { differingFields, fingerprint, type OperationParams } from "./fingerprint";
import type { StoredResponse } from "./entry";
import type { OperationKey } from "./keys";

/**
 * How long a copy lives: 24 h covers the retry window of any client we know of (app retries, bank redeliveries
 * within a day); an older replay simply reads PostgreSQL again and refreshes the copy.
 */
export const REPLAY_CACHE_TTL_S = 24 * 3600;

/** Outcomes the cache can decide on its own; null means "ask the ledger". */
export type CachedOutcome =
  | { readonly kind: "replay"; readonly response: StoredResponse }
  | { readonly kind: "mismatch"; readonly fields: string[] };

interface CacheRecord {
  f: string;
  p: OperationParams;
  s: number;
  b: string;
}

/** The cache key; `{userId}` is a Redis Cluster hash tag, so one user's keys share a slot (docs/scaling.md). */
export function replayCacheKey(key: OperationKey): string {
  return `replay:{${key.userId}}:${key.type}:${key.refId}`;
}

function isRecord(value: unknown): value is CacheRecord {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    typeof r.f === "string" &&
    typeof r.b === "string" &&
    typeof r.s === "number" &&
    Number.isInteger(r.s) &&
    r.s >= 100 &&
    r.s <= 599 &&
    typeof r.p === "object" &&
    r.p !== null
  );
}

/**
 * Looks `key` up in the copy. Returns `replay` (same fingerprint: the stored status and body, byte for byte),
 * `mismatch` (another fingerprint: the differing fields), or null when there is no usable copy or Redis is
 * unavailable. Never throws.
 */
export async function readCachedReplay(
  key: OperationKey,
  params: OperationParams,
  client: RedisClient | null = redis(),
): Promise<CachedOutcome | null> {
  if (client?.status !== "ready") return null;
  try {
    return cachedOutcomeOf(key, params, await client.get(replayCacheKey(key)));
  } catch {
    return null;
  }
}

/**
 * What the copy's raw text `raw` (as stored at {@link replayCacheKey}, or null when there is none) says about `key`
 * asked with `params`: `replay`, `mismatch`, or null when there is no usable copy (absent, not JSON, not a record).
 * For callers that read the copy in a script of their own (lib/limits/new-operation-rate.ts). Never throws.
 */
export function cachedOutcomeOf(key: OperationKey, params: OperationParams, raw: string | null): CachedOutcome | null {
  if (raw === null) return null;
  let record: unknown;
  try {
    record = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!isRecord(record)) return null;
  if (record.f !== fingerprint(key.type, params))
    return { kind: "mismatch", fields: differingFields(record.p, params) };
  return { kind: "replay", response: { status: record.s, body: record.b } };
}

/**
 * Writes the copy of a stored response (call only with a response read from or stored in the ledger).
 * Best effort: failures are ignored, the ledger stays the source. Connects the client lazily if needed.
 */
export async function cacheStoredResponse(
  key: OperationKey,
  params: OperationParams,
  response: StoredResponse,
  client: RedisClient | null = redis(),
): Promise<void> {
  if (!client) return;
  try {
    if (client.status === "wait") await client.connect();
    const record: CacheRecord = { f: fingerprint(key.type, params), p: params, s: response.status, b: response.body };
    await client.set(replayCacheKey(key), JSON.stringify(record), "EX", REPLAY_CACHE_TTL_S);
  } catch {
    // The copy is an optimisation; the ledger answers without it.
  }
}
