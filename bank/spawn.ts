/**
 * Starts the sandbox bank as a real child process (`node --import tsx bank/main.ts`) and waits for its readiness
 * line, for tests and launch scripts. The child gets only the variables passed in `env` on top of PATH/HOME, so a
 * developer's shell cannot change what a test runs against.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

/** The repository root (this file lives in `<root>/bank/`). */
const projectRoot = fileURLToPath(new URL("..", import.meta.url));

export interface SpawnBankOptions {
  /** Bank settings (see bank/config.ts). `BANK_PORT` defaults to 0 here: the OS picks a free port. */
  env: Record<string, string>;
  /** How long to wait for the readiness line. 20 s covers tsx's cold start on a busy 2-core machine. */
  readyTimeoutMs?: number;
}

export interface SpawnedBank {
  child: ChildProcess;
  pid: number;
  port: number;
  /** e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** Every stdout/stderr line so far (JSON log lines), for diagnostics. */
  output: string[];
  /** Resolves with the exit code (or signal name) once the child has exited. */
  exited: Promise<number | string>;
  /**
   * Graceful stop: SIGTERM, then SIGKILL if it has not exited within `timeoutMs` (default 10 s, above the bank's
   * 2 s shutdown grace). Resolves with the exit code or signal.
   */
  stop(timeoutMs?: number): Promise<number | string>;
  /** Crash: SIGKILL at once, no chance to save (the state file must already hold everything acknowledged). */
  kill(): Promise<number | string>;
}

/** Lines kept per child for diagnostics: enough to see why it failed, bounded for long runs. */
const MAX_OUTPUT_LINES = 2000;

/**
 * Spawns the bank and resolves once it logged `bank listening`.
 *
 * @throws Error (with the child's output) when it exits or stays silent past `readyTimeoutMs`.
 */
export async function spawnBank(options: SpawnBankOptions): Promise<SpawnedBank> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const child = spawn(process.execPath, ["--import", "tsx", "bank/main.ts"], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      // Next's types make NODE_ENV required in ProcessEnv; the bank itself does not read it.
      NODE_ENV: process.env.NODE_ENV ?? "development",
      BANK_PORT: "0",
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const exited = new Promise<number | string>((resolve) => {
    child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"));
  });

  const ready = new Promise<{ port: number; url: string }>((resolve, reject) => {
    const onLine = (line: string) => {
      output.push(line);
      if (output.length > MAX_OUTPUT_LINES) output.shift();
      if (!line.includes('"bank listening"')) return;
      try {
        const parsed = JSON.parse(line) as { port?: number; url?: string };
        if (typeof parsed.port === "number" && typeof parsed.url === "string")
          resolve({ port: parsed.port, url: parsed.url });
      } catch {
        // Not a JSON log line: keep waiting.
      }
    };
    createInterface({ input: child.stdout! }).on("line", onLine);
    createInterface({ input: child.stderr! }).on("line", onLine);
    void exited.then((code) => reject(new Error(`bank exited (${code}) before it was ready:\n${output.join("\n")}`)));
  });

  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`bank not ready within ${readyTimeoutMs} ms:\n${output.join("\n")}`)),
      readyTimeoutMs,
    );
  });
  let address: { port: number; url: string };
  try {
    address = await Promise.race([ready, timeout]);
  } catch (error) {
    child.kill("SIGKILL");
    await exited;
    throw error;
  } finally {
    clearTimeout(timer);
  }

  const stop = async (timeoutMs = 10_000): Promise<number | string> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      const code = await exited;
      clearTimeout(killer);
      return code;
    }
    return exited;
  };
  const kill = async (): Promise<number | string> => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    return exited;
  };
  return { child, pid: child.pid!, port: address.port, url: address.url, output, exited, stop, kill };
}
