/**
 * coalesceFreshReads (lib/api-tokens/fresh-reads.ts): identical concurrent reads share a query, but a caller is
 * only ever answered by a query sent after it called (a token revoked before a request starts must refuse that
 * request, contract section 4). The negative control runs the same scenario against the classic single-flight
 * (join the query already running), which answers a late caller from a stale read: the scenario's assertions
 * fail for it, which is the evidence that they bite.
 */
import { describe, expect, it } from "vitest";
import { coalesceFreshReads } from "../../lib/api-tokens/fresh-reads";

type Coalescer = <K, V>(read: (key: K) => Promise<V>) => (key: K) => Promise<V>;

/** The broken alternative: every call joins the query in flight, whenever it was sent. */
const joinRunning: Coalescer = <K, V>(read: (key: K) => Promise<V>) => {
  const inFlight = new Map<K, Promise<V>>();
  return (key: K) => {
    const running = inFlight.get(key);
    if (running) return running;
    const sent = read(key).finally(() => inFlight.delete(key));
    inFlight.set(key, sent);
    return sent;
  };
};

/**
 * A store whose reads are held until released, one by one: each read returns the value the store had WHEN THE
 * READ WAS SENT (a query's snapshot), so a caller answered by an older read sees an older value.
 */
function heldStore(initial: string) {
  let value = initial;
  const pending: { release: () => void }[] = [];
  let reads = 0;
  const read = (_key: string) => {
    reads += 1;
    const snapshot = value;
    return new Promise<string>((resolve) => pending.push({ release: () => resolve(snapshot) }));
  };
  return {
    read,
    set: (next: string) => {
      value = next;
    },
    reads: () => reads,
    /** Releases the oldest held read; then lets the callbacks it triggers run (they may send the next read). */
    releaseOldest: async () => {
      pending.shift()?.release();
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
}

/**
 * The scenario: a read is running; then the value changes (a revocation commits); then a second caller arrives.
 * Returns what each caller got and how many reads were sent.
 */
async function lateCallerAfterChange(coalesce: Coalescer) {
  const store = heldStore("active");
  const lookup = coalesce(store.read);
  const early = lookup("token");
  store.set("revoked");
  const late = lookup("token");
  await store.releaseOldest();
  await store.releaseOldest();
  return { early: await early, late: await late, reads: store.reads() };
}

describe("coalesceFreshReads", () => {
  it("answers a caller only from a read sent after it called", async () => {
    expect(await lateCallerAfterChange(coalesceFreshReads)).toEqual({ early: "active", late: "revoked", reads: 2 });
  });

  it("negative control: joining the running read answers the late caller from before the change", async () => {
    const naive = await lateCallerAfterChange(joinRunning);
    expect(naive.late).toBe("active");
    expect(naive).not.toEqual({ early: "active", late: "revoked", reads: 2 });
  });

  it("serves a burst of identical calls with two reads: the running one and one queued next read", async () => {
    const store = heldStore("v");
    const lookup = coalesceFreshReads(store.read);
    const calls = Array.from({ length: 100 }, () => lookup("token"));
    expect(store.reads()).toBe(1);
    await store.releaseOldest();
    expect(store.reads()).toBe(2);
    await store.releaseOldest();
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 100 }, () => "v"));
    expect(store.reads()).toBe(2);
    // Nothing pending: the next call sends a read of its own.
    const later = lookup("token");
    expect(store.reads()).toBe(3);
    await store.releaseOldest();
    expect(await later).toBe("v");
  });

  it("keeps keys apart", async () => {
    const seen: string[] = [];
    const lookup = coalesceFreshReads(async (key: string) => {
      seen.push(key);
      return key.toUpperCase();
    });
    expect(await Promise.all([lookup("a"), lookup("b"), lookup("a")])).toEqual(["A", "B", "A"]);
    expect(seen).toEqual(["a", "b", "a"]);
  });

  it("rejects only the callers of a failed read; the queued callers get a read of their own", async () => {
    let reads = 0;
    const releases: (() => void)[] = [];
    const lookup = coalesceFreshReads(
      (_key: string) =>
        new Promise<string>((resolve, reject) => {
          reads += 1;
          const n = reads;
          releases.push(() => (n === 1 ? reject(new Error("connection lost")) : resolve("fine")));
        }),
    );
    const first = lookup("k");
    const queued = lookup("k");
    releases.shift()?.();
    await expect(first).rejects.toThrow("connection lost");
    for (let i = 0; i < 5; i++) await Promise.resolve();
    releases.shift()?.();
    expect(await queued).toBe("fine");
    expect(reads).toBe(2);
    // A synchronous throw is that read's rejection, and the key is usable afterwards.
    const throwing = coalesceFreshReads((_key: string): Promise<string> => {
      throw new Error("sync");
    });
    await expect(throwing("k")).rejects.toThrow("sync");
    await expect(throwing("k")).rejects.toThrow("sync");
  });
});
