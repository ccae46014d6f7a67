/**
 * `npm run users -- create ...` (scripts/users.ts) run as a real child process against the test database,
 * checking the contract's promises (section 4): the token alone on the last line of stdout, exit 1 on a
 * duplicate email, exit 2 with "no running demo" when there is no database to find.
 */
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { assertLocalDatabase } from "../../scripts/lib/stack";
import { findPrincipalByToken } from "../../lib/api-tokens/find-principal-by-token";
import { signInWithPassword } from "../../lib/auth/sign-in-with-password";

const projectRoot = fileURLToPath(new URL("../..", import.meta.url));
const tsxCli = join(projectRoot, "node_modules", "tsx", "dist", "cli.mjs");
const usersScript = join(projectRoot, "scripts", "users.ts");
const PASSWORD = "correct horse battery staple";

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs scripts/users.ts with `args`, in `cwd`, with the test's environment plus `env` (a value of undefined
 * removes the variable). Resolves with the exit code and output; never rejects on a non-zero exit.
 */
function runUsers(
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined>; input?: string } = {},
): Promise<RunResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete childEnv[name];
    else childEnv[name] = value;
  }
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [tsxCli, usersScript, ...args],
      // 60 s: tsx compiles on first start; the work itself takes well under a second.
      { cwd: options.cwd ?? projectRoot, env: childEnv, timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") {
          reject(error);
          return;
        }
        resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
      },
    );
    // Standard input is a pipe (never a terminal here): the given text, then end of input.
    child.stdin?.end(options.input ?? "");
  });
}

function lastLine(text: string): string {
  const lines = text.split("\n").filter((line) => line.length > 0);
  return lines[lines.length - 1] ?? "";
}

const databaseUrl = process.env.DATABASE_URL;

describe("npm run users -- create", () => {
  it("creates an admin with --token and prints the token alone as the last line of stdout", async () => {
    if (!databaseUrl) throw new Error("DATABASE_URL is not set: run under the vitest 'integration' project");
    assertLocalDatabase(databaseUrl);
    const email = `cli-${randomUUID()}@example.test`;
    const result = await runUsers(["create", "--email", email, "--password", PASSWORD, "--admin", "--token"], {
      env: { DATABASE_URL: databaseUrl },
    });
    expect(result.stderr).toContain(email);
    expect(result.code).toBe(0);
    const token = lastLine(result.stdout);
    expect(token).toMatch(/^wlt_[A-Za-z0-9_-]{43}$/);
    expect(result.stdout).toBe(`${token}\n`);
    const principal = await findPrincipalByToken(token);
    expect(principal).toMatchObject({ email, role: "admin", via: "token" });
  });

  it("creates a plain user without --token and prints nothing on stdout", async () => {
    const email = `cli-${randomUUID()}@example.test`;
    const result = await runUsers(["create", "--email", email, "--password", PASSWORD], {
      env: { DATABASE_URL: databaseUrl },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("");
  });

  it("exits 1 on a duplicate email and prints no token", async () => {
    const email = `cli-${randomUUID()}@example.test`;
    const first = await runUsers(["create", "--email", email, "--password", PASSWORD], {
      env: { DATABASE_URL: databaseUrl },
    });
    expect(first.code).toBe(0);
    const second = await runUsers(["create", "--email", email.toUpperCase(), "--password", PASSWORD, "--token"], {
      env: { DATABASE_URL: databaseUrl },
    });
    expect(second.code).toBe(1);
    expect(second.stdout).toBe("");
    expect(second.stderr).toContain("already exists");
  });

  it('exits 2 with "no running demo" without DATABASE_URL and without .data/runtime.json', async () => {
    // resolveCliEnvironment looks for .data/runtime.json under the working directory: an empty folder has none.
    const emptyDir = mkdtempSync(join(tmpdir(), "users-cli-"));
    try {
      const result = await runUsers(["create", "--email", `cli-${randomUUID()}@example.test`, "--password", PASSWORD], {
        cwd: emptyDir,
        env: { DATABASE_URL: undefined },
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("no running demo");
      expect(result.stdout).toBe("");
    } finally {
      rmSync(emptyDir, { recursive: true, force: true });
    }
  });

  it("exits 2 on bad arguments without touching the database", async () => {
    const result = await runUsers(["create", "--email", "not-an-email", "--password", "short"], {
      env: { DATABASE_URL: databaseUrl },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--email");
    expect(result.stderr).toContain("--password");
  });

  it("reads the password from standard input with --password-stdin (one trailing newline removed)", async () => {
    const email = `cli-${randomUUID()}@example.test`;
    const password = "a password from stdin 1";
    const args = ["create", "--email", email, "--password-stdin", "--token"];
    expect(args.join(" ")).not.toContain(password);
    const result = await runUsers(args, { env: { DATABASE_URL: databaseUrl }, input: `${password}\n` });
    expect(result.code).toBe(0);
    const signedIn = await signInWithPassword({ email, password }, new Headers());
    expect(signedIn.kind).toBe("signed_in");
    const withNewline = await signInWithPassword({ email, password: `${password}\n` }, new Headers());
    expect(withNewline.kind).toBe("wrong_credentials");
  });

  it("exits 2 without a password when standard input is not a terminal, and with both password options", async () => {
    const noPassword = await runUsers(["create", "--email", `cli-${randomUUID()}@example.test`], {
      env: { DATABASE_URL: databaseUrl },
    });
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain("--password-stdin");
    const both = await runUsers(
      ["create", "--email", `cli-${randomUUID()}@example.test`, "--password-stdin", "--password", PASSWORD],
      { env: { DATABASE_URL: databaseUrl }, input: PASSWORD },
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both");
  });

  it("asks a terminal for the password twice without echoing it (under a pseudo-terminal from script(1))", async () => {
    const email = `cli-${randomUUID()}@example.test`;
    const password = "typed at the prompt 1";
    const command = [process.execPath, tsxCli, usersScript, "create", "--email", email].join(" ");
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let screen = "";
    const answered = new Set<string>();
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    child.stdout.on("data", (chunk: Buffer) => {
      screen += chunk.toString("utf8");
      // Type each answer only once its prompt is on the screen, as a person would.
      for (const prompt of ["Password: ", "Repeat password: "]) {
        if (screen.includes(prompt) && !answered.has(prompt)) {
          answered.add(prompt);
          child.stdin.write(`${password}\n`);
        }
      }
    });
    expect(await exited).toBe(0);
    expect(screen).not.toContain(password);
    expect((await signInWithPassword({ email, password }, new Headers())).kind).toBe("signed_in");
  });
});
