/**
 * C16: the one rule for secrets (contract section 9), as a pure function: missing, shorter than 32 bytes, or a value
 * published in this repository is refused, naming the variable and never echoing the value. The server's start
 * (instrumentation.ts) is exercised for real in tests/http/secrets-at-start.test.ts.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  assertSecrets,
  EnvError,
  PUBLISHED_SECRETS,
  refuseUnusableSecrets,
  SECRET_BYTES_MIN,
  secretProblems,
  startProblems,
} from "../../lib/env";
import { parseBankConfig } from "../../bank/config";

const good = () => randomBytes(32).toString("hex");
const valid = () => ({ BANK_WEBHOOK_SECRETS: `whsec_${good()}`, BETTER_AUTH_SECRET: good() });

describe("C16: secrets are never missing, short or published", () => {
  it("accepts two random 32-byte secrets, and a rotation list of usable ones", () => {
    expect(secretProblems(valid())).toEqual([]);
    expect(secretProblems({ ...valid(), BANK_WEBHOOK_SECRETS: ` ${good()} , ${good()} ` })).toEqual([]);
    expect(() => assertSecrets(valid())).not.toThrow();
  });

  it("refuses a missing secret, naming the variable", () => {
    for (const name of ["BANK_WEBHOOK_SECRETS", "BETTER_AUTH_SECRET"] as const) {
      for (const missing of [undefined, "", "   ", ...(name === "BANK_WEBHOOK_SECRETS" ? [" , ,"] : [])]) {
        const problems = secretProblems({ ...valid(), [name]: missing });
        expect(problems, `${name}=${String(missing)}`).toHaveLength(1);
        expect(problems[0]).toMatch(new RegExp(`^${name} is missing`));
      }
    }
  });

  it("refuses a secret shorter than 32 bytes (bytes, not characters) without echoing it", () => {
    const short = "s".repeat(SECRET_BYTES_MIN - 1);
    const problems = secretProblems({ ...valid(), BETTER_AUTH_SECRET: short });
    expect(problems).toEqual(["BETTER_AUTH_SECRET is shorter than 32 bytes"]);
    expect(problems.join()).not.toContain(short);
    // 11 characters of 3 bytes each = 33 bytes: long enough.
    expect(secretProblems({ ...valid(), BETTER_AUTH_SECRET: "€".repeat(11) })).toEqual([]);
    // One short secret in a rotation list is named by its position.
    expect(secretProblems({ ...valid(), BANK_WEBHOOK_SECRETS: `${good()},whsec_8bytes` })).toEqual([
      "BANK_WEBHOOK_SECRETS (secret 2 of 2) is shorter than 32 bytes",
    ]);
  });

  it("refuses every value this repository ever published, and 'change me' placeholders of any length", () => {
    for (const published of PUBLISHED_SECRETS) {
      for (const name of ["BANK_WEBHOOK_SECRETS", "BETTER_AUTH_SECRET"] as const) {
        expect(secretProblems({ ...valid(), [name]: published })).toEqual([
          `${name} is a value published in this repository: generate your own`,
        ]);
      }
    }
    expect(secretProblems({ ...valid(), BETTER_AUTH_SECRET: `please-CHANGE_ME-${good()}` })).toHaveLength(1);
  });

  it("no secret in .env.example is usable, and no published value is a default any more", () => {
    const example = readFileSync(".env.example", "utf8");
    const assigned = /^(BANK_WEBHOOK_SECRETS|BETTER_AUTH_SECRET)=(.*)$/gm;
    for (const [, name, value] of example.matchAll(assigned)) {
      expect(secretProblems({ ...valid(), [name!]: value }), name).not.toEqual([]);
    }
    expect(() => assertSecrets({})).toThrow(EnvError);
  });

  it("the sandbox bank applies the same rule to its signing secrets", () => {
    expect(() => parseBankConfig({})).toThrow(/BANK_WEBHOOK_SECRETS is missing/);
    expect(() => parseBankConfig({ BANK_WEBHOOK_SECRETS: "whsec_dev_only_change_me" })).toThrow(/published/);
    expect(parseBankConfig({ BANK_WEBHOOK_SECRETS: valid().BANK_WEBHOOK_SECRETS }).webhookSecrets).toHaveLength(1);
  });
});

describe("C33: checked at start, not at build, told apart by the phase Next.js passes, never by the environment", () => {
  const BUILD = "phase-production-build";
  const published = { ...valid(), BETTER_AUTH_SECRET: PUBLISHED_SECRETS[1] };
  const builtPhaseInEnv = { ...published, NEXT_PHASE: BUILD };

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("C33: a server (next start, next dev, instrumentation's register) is checked whatever NEXT_PHASE says", () => {
    for (const phase of ["phase-production-server", "phase-development-server", "server"]) {
      const problems = startProblems(phase, builtPhaseInEnv);
      expect(problems, phase).toContain(
        "BETTER_AUTH_SECRET is a value published in this repository: generate your own",
      );
      // NEXT_PHASE=phase-production-build would make Next.js skip instrumentation.ts: refused by itself too.
      expect(problems.some((p) => p.startsWith(`NEXT_PHASE is ${BUILD} in a server's environment`))).toBe(true);
      expect(startProblems(phase, { ...valid(), NEXT_PHASE: BUILD })).toHaveLength(1);
      expect(startProblems(phase, valid())).toEqual([]);
    }
  });

  it("C33: only the build's own phase (and the other non-server phases) skips the check", () => {
    for (const phase of [BUILD, "phase-export", "phase-info", "phase-test", "phase-analyze"]) {
      expect(startProblems(phase, { NEXT_PHASE: BUILD }), phase).toEqual([]);
    }
  });

  it("C33: refuseUnusableSecrets exits 1 for a server with NEXT_PHASE=phase-production-build, naming the variables", () => {
    const exit = vi.spyOn(process, "exit").mockImplementation((() => undefined) as never);
    const written: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    refuseUnusableSecrets("server", builtPhaseInEnv);
    expect(exit).toHaveBeenCalledWith(1);
    expect(written.join("")).toMatch(/BETTER_AUTH_SECRET is a value published/);
    expect(written.join("")).not.toContain(PUBLISHED_SECRETS[1]);
    exit.mockClear();
    refuseUnusableSecrets(BUILD, builtPhaseInEnv);
    refuseUnusableSecrets("phase-production-server", valid());
    expect(exit).not.toHaveBeenCalled();
  });
});
