/**
 * tests/helpers/wait.ts: the shared bounded wait returns the first accepted value, and a wait that never succeeds
 * ends at its deadline with a message naming what was awaited and the last value seen (its negative control).
 */
import { describe, expect, it } from "vitest";
import { waitFor } from "../helpers/wait";

describe("waitFor", () => {
  it("returns the first value the predicate accepts, reading again until then", async () => {
    let reads = 0;
    const value = await waitFor(
      () => ++reads,
      (n) => n >= 3,
      { what: "the third read", intervalMs: 1 },
    );
    expect(value).toBe(3);
    expect(reads).toBe(3);
  });

  it("never accepted: throws at the deadline, naming what was awaited and the last value", async () => {
    const startedMs = Date.now();
    await expect(
      waitFor(
        () => ({ status: "pending" }),
        () => false,
        { what: "the charge to settle", timeoutMs: 50, intervalMs: 5 },
      ),
    ).rejects.toThrow('timed out after 50 ms waiting for the charge to settle; last value: {"status":"pending"}');
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(50);
  });

  it("a read that throws ends the wait with its error", async () => {
    await expect(
      waitFor(
        () => {
          throw new Error("server exited");
        },
        () => true,
        { what: "x" },
      ),
    ).rejects.toThrow("server exited");
  });
});
