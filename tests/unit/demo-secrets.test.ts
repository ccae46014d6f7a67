/**
 * C16: the demo generates its secrets once per data folder (scripts/lib/secrets.ts): random, usable by the
 * server's own rule, kept (mode 0600) across restarts of the same folder, and different in two fresh folders.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { secretProblems } from "../../lib/env";
import { demoSecrets, demoSecretsFile } from "../../scripts/lib/secrets";

const folders: string[] = [];
function freshDataFolder(): string {
  const root = mkdtempSync(join(tmpdir(), "demo-data-"));
  folders.push(root);
  return join(root, ".data");
}

afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

describe("C16: the demo's secrets", () => {
  it("differ between two fresh data folders, pass the server's check, and are written with mode 0600", () => {
    const [first, second] = [freshDataFolder(), freshDataFolder()];
    const a = demoSecrets(first);
    const b = demoSecrets(second);
    expect(a.webhookSecret).not.toBe(b.webhookSecret);
    expect(a.authSecret).not.toBe(b.authSecret);
    for (const secrets of [a, b]) {
      expect(
        secretProblems({ BANK_WEBHOOK_SECRETS: secrets.webhookSecret, BETTER_AUTH_SECRET: secrets.authSecret }),
      ).toEqual([]);
    }
    expect(statSync(demoSecretsFile(first)).mode & 0o777).toBe(0o600);
  });

  it("are kept across restarts of the same data folder", () => {
    const folder = freshDataFolder();
    const first = demoSecrets(folder);
    expect(demoSecrets(folder)).toEqual(first);
    expect(JSON.parse(readFileSync(demoSecretsFile(folder), "utf8"))).toEqual(first);
  });

  it("refuse a secrets file holding a published or short value instead of using it", () => {
    const folder = freshDataFolder();
    demoSecrets(folder);
    const file = demoSecretsFile(folder);
    writeFileSync(file, JSON.stringify({ webhookSecret: "whsec_dev_only_change_me", authSecret: "x".repeat(64) }));
    expect(() => demoSecrets(folder)).toThrow(/BANK_WEBHOOK_SECRETS is a value published/);
    writeFileSync(file, JSON.stringify({ webhookSecret: "x".repeat(40) }));
    expect(() => demoSecrets(folder)).toThrow(/not \{ webhookSecret, authSecret \}/);
  });
});
