/**
 * The README's runnable examples, as a newcomer pastes them: every `sh` block that follows the line
 * `<!-- example: ... -->` runs in bash twice in a row against the test stack, and each run must end in what the
 * example promises (a created top-up). A second run that depends on state the first one left (an email that now
 * has an account, a token that was not printed) fails here.
 *
 * The only edit to a block is its address: the README's `http://127.0.0.1:3000` becomes the test stack's app. The
 * CLI in the block finds the stack's database through DATABASE_URL, as it would find a running demo.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../../scripts/lib/stack";
import { appUrl, testStack } from "../helpers/stack";

const execFileAsync = promisify(execFile);

/** The marker line before a runnable block, and the README's address that the test stack's replaces. */
const EXAMPLE_MARKER = /^<!-- example: .* -->$/;
const README_APP_URL = "http://127.0.0.1:3000";

/**
 * One run of a block: npm and tsx start in ~2 s and argon2id hashes the password; 60 s leaves room on a loaded
 * 2-core machine and still fails a hung command.
 */
const RUN_TIMEOUT_MS = 60_000;

/** The `sh` blocks of `markdown` that directly follow an example marker line, in order. */
function markedShellBlocks(markdown: string): string[] {
  const lines = markdown.split("\n");
  const blocks: string[] = [];
  for (let index = 0; index < lines.length - 1; index++) {
    if (!EXAMPLE_MARKER.test(lines[index]!) || lines[index + 1] !== "```sh") continue;
    const end = lines.indexOf("```", index + 2);
    if (end < 0) throw new Error(`README.md line ${index + 2}: the example's block is not closed`);
    blocks.push(lines.slice(index + 2, end).join("\n"));
  }
  return blocks;
}

/** Runs `script` with bash in the project folder, with the test stack's database and nothing else of ours. */
async function runExample(script: string): Promise<{ stdout: string; stderr: string }> {
  const stack = testStack();
  return execFileAsync("bash", ["-c", script.replaceAll(README_APP_URL, appUrl())], {
    cwd: projectRoot,
    timeout: RUN_TIMEOUT_MS,
    // A newcomer's shell: none of the test run's settings, and no NODE_ENV (which Next's types declare required).
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/tmp",
      DATABASE_URL: stack.databaseUrl,
      LOG_LEVEL: "warn",
    } as unknown as NodeJS.ProcessEnv,
  });
}

describe("README.md examples", () => {
  const examples = markedShellBlocks(readFileSync(join(projectRoot, "README.md"), "utf8"));

  it("marks the API example as runnable (a marker lost in an edit would silently skip it)", () => {
    expect(examples.length).toBeGreaterThanOrEqual(1);
    expect(examples.some((block) => block.includes("/api/v1/topups"))).toBe(true);
    for (const block of examples) expect(block).toContain(README_APP_URL);
  });

  it(
    "each example creates a top-up on its first run and again on a second run right after",
    async () => {
      for (const block of examples) {
        for (const run of [1, 2]) {
          const { stdout, stderr } = await runExample(block);
          const answer = (() => {
            try {
              return JSON.parse(stdout) as { topup?: { amount?: number; status?: string } };
            } catch {
              return null;
            }
          })();
          expect(answer?.topup, `run ${run} printed:\n${stdout}\nand on stderr:\n${stderr}`).toMatchObject({
            amount: 2500,
          });
        }
      }
    },
    4 * RUN_TIMEOUT_MS,
  );
});
