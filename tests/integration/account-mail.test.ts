/**
 * The account's mail that is not a link from better-auth (docs/decisions/054-mail-outbox.md), on the real
 * PostgreSQL and Redis: a sign-in from a new device queues one notice per device, never for an account's first
 * device; a password change queues a notice; mail a person can ask for is throttled per typed address and per
 * client address, whether or not the address has an account.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { recordSignInDevice } from "../../lib/auth/note-sign-in-device";
import { countMailRequest, MAIL_REQUEST_ADDRESS_RULE, MAIL_REQUEST_EMAIL_RULE } from "../../lib/limits/auth-throttles";
import { queuePasswordChanged } from "../../lib/mail/account-mail";
import { createTestUser, testPool } from "../helpers/db";

async function queued(userId: string, kind: string) {
  const { rows } = await testPool().query<{ event_key: string; payload: Record<string, unknown> | null }>(
    `SELECT event_key, payload FROM mail_outbox WHERE user_id = $1 AND kind = $2 ORDER BY id`,
    [userId, kind],
  );
  return rows;
}

const device = () => randomUUID().replaceAll("-", "");

describe("a sign-in from a new device", () => {
  it("the first device is recorded quietly; a second one queues one notice, once however often it signs in", async () => {
    const user = await createTestUser();
    const home = device();
    expect(await recordSignInDevice({ userId: user.id, deviceId: home, userAgent: "Firefox" })).toBe("first");
    expect(await recordSignInDevice({ userId: user.id, deviceId: home, userAgent: "Firefox" })).toBe("known");
    expect(await queued(user.id, "new_device")).toEqual([]);

    const phone = device();
    const firstTimes = await Promise.all(
      [1, 2, 3].map(() => recordSignInDevice({ userId: user.id, deviceId: phone, userAgent: "Phone\u0007Browser" })),
    );
    expect(firstTimes.filter((outcome) => outcome === "new")).toHaveLength(1);
    const notices = await queued(user.id, "new_device");
    expect(notices).toHaveLength(1);
    // Control characters of the User-Agent are not carried into the message.
    expect(notices[0]?.payload?.device).toBe("Phone Browser");
  });
});

describe("a password change", () => {
  it("queues a notice each time", async () => {
    const user = await createTestUser();
    await queuePasswordChanged(user.id, "changed");
    await queuePasswordChanged(user.id, "reset");
    expect((await queued(user.id, "password_changed")).map((row) => row.payload?.how)).toEqual(["changed", "reset"]);
  });
});

describe("mail a person can ask for", () => {
  it(`is refused past ${MAIL_REQUEST_EMAIL_RULE.points} per hour for one typed address`, async () => {
    const email = `throttle-${randomUUID()}@example.test`;
    const outcomes = [];
    for (let i = 0; i <= MAIL_REQUEST_EMAIL_RULE.points; i++) {
      outcomes.push(await countMailRequest(email, `192.0.2.${i + 1}`));
    }
    expect(outcomes.slice(0, -1).every((outcome) => outcome.allowed)).toBe(true);
    expect(outcomes.at(-1)).toMatchObject({ allowed: false });
  });

  it(`is refused past ${MAIL_REQUEST_ADDRESS_RULE.points} per hour from one client address`, async () => {
    const address = `198.51.100.${1 + Math.floor(Math.random() * 250)}`;
    const outcomes = [];
    for (let i = 0; i <= MAIL_REQUEST_ADDRESS_RULE.points; i++) {
      outcomes.push(await countMailRequest(`probe-${i}-${randomUUID()}@example.test`, address));
    }
    expect(outcomes.slice(0, -1).every((outcome) => outcome.allowed)).toBe(true);
    expect(outcomes.at(-1)).toMatchObject({ allowed: false });
  });
});
