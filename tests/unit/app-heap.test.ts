/**
 * The production server's heap bound (docs/decisions/051-bounded-heap.md): `next start` is spawned with
 * `--max-old-space-size=<APP_HEAP_MB>` and `--max-semi-space-size=16` (scripts/lib/stack.ts `appHeapNodeArgs`),
 * 768 MB unless set, none with 0, an operator's own bound in NODE_OPTIONS wins, and a bad value is refused by
 * lib/env.ts like every other setting. What the bound does to memory is measured by bench/ (docs/benchmarks.md,
 * "Bounding the heap"), not here.
 */
import { describe, expect, it } from "vitest";
import { EnvError, parseEnv } from "../../lib/env";
import { appHeapNodeArgs } from "../../scripts/lib/stack";

describe("the production server's heap bound", () => {
  it("bounds the old generation at 768 MB and keeps V8's 16 MB semi-spaces when nothing is set", () => {
    expect(parseEnv({}).APP_HEAP_MB).toBe(768);
    expect(appHeapNodeArgs({})).toEqual(["--max-old-space-size=768", "--max-semi-space-size=16"]);
  });

  it("takes the operator's APP_HEAP_MB, and 0 leaves V8's defaults", () => {
    expect(appHeapNodeArgs({ APP_HEAP_MB: "1024" })).toEqual(["--max-old-space-size=1024", "--max-semi-space-size=16"]);
    expect(appHeapNodeArgs({ APP_HEAP_MB: "0" })).toEqual([]);
  });

  it("leaves out what the operator's NODE_OPTIONS already bounds (the command line would override it)", () => {
    expect(appHeapNodeArgs({ NODE_OPTIONS: "--max-old-space-size=2048" })).toEqual(["--max-semi-space-size=16"]);
    expect(appHeapNodeArgs({ NODE_OPTIONS: "--enable-source-maps --max_old_space_size=300" })).toEqual([
      "--max-semi-space-size=16",
    ]);
    expect(appHeapNodeArgs({ NODE_OPTIONS: "--max-old-space-size=300 --max-semi-space-size=8" })).toEqual([]);
    // Other options are no bound: ours still applies.
    expect(appHeapNodeArgs({ NODE_OPTIONS: "--enable-source-maps" })).toEqual([
      "--max-old-space-size=768",
      "--max-semi-space-size=16",
    ]);
  });

  it("refuses a bound below what the app holds when idle, above 64 GiB, or not a whole number", () => {
    for (const bad of ["64", "127", "65537", "256.5", "-1", "lots"]) {
      expect(() => parseEnv({ APP_HEAP_MB: bad }), bad).toThrow(EnvError);
      expect(() => appHeapNodeArgs({ APP_HEAP_MB: bad }), bad).toThrow(/APP_HEAP_MB/);
    }
    expect(parseEnv({ APP_HEAP_MB: "128" }).APP_HEAP_MB).toBe(128);
  });
});
