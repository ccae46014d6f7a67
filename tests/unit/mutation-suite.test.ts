/**
 * The mutation suite's test files exist (docs/mutation.md): vitest skips an `include` entry that matches no file, so a
 * renamed test silently leaves the suite and its mutants survive for no reason (credit-matching-topup.test.ts did,
 * renamed to settle-matching-entry.test.ts, until the next full run showed webhook-settlement.ts at 37.5%).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../../scripts/lib/stack";

/** The test files named in `configText`'s `include` list that do not exist under the project root. */
function missingTestFiles(configText: string): string[] {
  const listed = [...configText.matchAll(/"(tests\/[^"]+\.test\.ts)"/g)].map((match) => match[1]!);
  if (listed.length === 0) throw new Error("no test file listed: the config's shape changed");
  return listed.filter((path) => !existsSync(join(projectRoot, path)));
}

describe("the mutation suite (vitest.stryker.config.mts)", () => {
  it("lists only test files that exist", () => {
    expect(missingTestFiles(readFileSync(join(projectRoot, "vitest.stryker.config.mts"), "utf8"))).toEqual([]);
  });

  it("negative control: a file that is gone is named", () => {
    const config = 'include: ["tests/unit/ledger-pure.test.ts", "tests/integration/credit-matching-topup.test.ts"]';
    expect(missingTestFiles(config)).toEqual(["tests/integration/credit-matching-topup.test.ts"]);
  });
});
