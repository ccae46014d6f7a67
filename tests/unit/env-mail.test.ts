/**
 * A production server needs a mail server (docs/decisions/054-mail-outbox.md): `SMTP_URL`, or mail switched off on
 * purpose with `MAIL_DELIVERY=off`. Development runs without one (its mail waits in the outbox).
 */
import { describe, expect, it } from "vitest";
import { mailProblems, parseEnv, startProblems } from "../../lib/env";

describe("mailProblems", () => {
  it("refuses a production server with neither SMTP_URL nor MAIL_DELIVERY=off, naming both ways out", () => {
    const problems = mailProblems({ NODE_ENV: "production" });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/SMTP_URL is missing/);
    expect(problems[0]).toMatch(/MAIL_DELIVERY=off/);
    expect(mailProblems({ NODE_ENV: "production", SMTP_URL: "  " })).toHaveLength(1);
  });

  it("accepts SMTP_URL, or mail switched off, and asks nothing of development", () => {
    expect(mailProblems({ NODE_ENV: "production", SMTP_URL: "smtp://mail.example:587" })).toEqual([]);
    expect(mailProblems({ NODE_ENV: "production", MAIL_DELIVERY: "off" })).toEqual([]);
    expect(mailProblems({ NODE_ENV: "development" })).toEqual([]);
  });

  it("is part of what stops a server from starting", () => {
    const secrets = { BANK_WEBHOOK_SECRETS: "w".repeat(40), BETTER_AUTH_SECRET: "a".repeat(40) };
    expect(startProblems("server", { ...secrets, NODE_ENV: "production" })).toEqual(
      mailProblems({ NODE_ENV: "production" }),
    );
    expect(startProblems("server", { ...secrets, NODE_ENV: "production", MAIL_DELIVERY: "off" })).toEqual([]);
  });
});

describe("SMTP_URL", () => {
  it("takes smtp:// and smtps:// only", () => {
    expect(parseEnv({ SMTP_URL: "smtp://user:pw@127.0.0.1:1025" }).SMTP_URL).toBe("smtp://user:pw@127.0.0.1:1025");
    expect(parseEnv({ SMTP_URL: "smtps://mail.example:465" }).SMTP_URL).toBe("smtps://mail.example:465");
    expect(() => parseEnv({ SMTP_URL: "http://mail.example" })).toThrow(/SMTP_URL/);
    expect(parseEnv({ SMTP_URL: "" }).SMTP_URL).toBeUndefined();
  });
});
