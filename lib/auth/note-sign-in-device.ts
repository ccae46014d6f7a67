/**
 * "A sign-in from a new device" (docs/decisions/054-mail-outbox.md): each browser gets a random device id in a
 * long-lived cookie; the first sign-in of an account from an id it never used queues a notice, once per device (the
 * `user_devices` row is the claim). An account's first device (its sign-up, or the first sign-in of an account that
 * has none recorded) is recorded without a notice: nobody needs to be told about themselves.
 */
import { createHash, randomBytes } from "node:crypto";
import { pool } from "../db";
import { log } from "../log";
import { queueMail } from "../mail/outbox";

/** The cookie that names this browser. */
export const DEVICE_COOKIE = "wallet_device";
/** A device id: 32 hex characters (128 random bits). */
const DEVICE_ID = /^[0-9a-f]{32}$/;
/** The cookie lasts 400 days, the most browsers keep one (RFC 6265bis, section 5.5). */
export const DEVICE_COOKIE_MAX_AGE_S = 400 * 24 * 3600;
/** The longest browser description a notice quotes, in characters. */
const DEVICE_TEXT_MAX = 160;

/** The cookie jar of a server action (next/headers `cookies()`), as far as this needs it. */
export interface DeviceCookies {
  get(name: string): { value: string } | undefined;
  set(name: string, value: string, options: { httpOnly: boolean; sameSite: "lax"; path: string; maxAge: number }): void;
}

/** This browser's device id: the cookie's when it is well-formed, else a new one, set on the response. */
export function deviceIdOf(cookies: DeviceCookies): string {
  const current = cookies.get(DEVICE_COOKIE)?.value;
  if (current && DEVICE_ID.test(current)) return current;
  const created = randomBytes(16).toString("hex");
  cookies.set(DEVICE_COOKIE, created, { httpOnly: true, sameSite: "lax", path: "/", maxAge: DEVICE_COOKIE_MAX_AGE_S });
  return created;
}

/**
 * Records that `userId` signed in on the device `deviceId`, and queues the new-device notice when it is new and not
 * the account's first.
 * @param input.userAgent the request's User-Agent (quoted in the notice, cut to 160 characters, control characters
 *   removed); null when absent.
 * @returns `known` (seen before), `first` (the account's first device: no notice) or `new` (a notice is queued).
 * @throws database errors.
 */
export async function recordSignInDevice(input: {
  userId: string;
  deviceId: string;
  userAgent: string | null;
}): Promise<"known" | "first" | "new"> {
  const deviceHash = createHash("sha256").update(input.deviceId, "utf8").digest("hex");
  const { rows } = await pool().query<{ devices: number }>(
    `WITH inserted AS (
       INSERT INTO user_devices (user_id, device_hash) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM user_devices WHERE user_id = $1) AS devices FROM inserted`,
    [input.userId, deviceHash],
  );
  const devicesBefore = rows[0]?.devices;
  if (devicesBefore === undefined) return "known";
  // The count reads the snapshot before the INSERT: 0 means this is the account's first device.
  if (devicesBefore === 0) return "first";
  const device = (input.userAgent ?? "a browser that did not say what it is")
    // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
    .replace(/[\u0000-\u001f\u007f]/g, " ")
    .slice(0, DEVICE_TEXT_MAX);
  await queueMail(pool(), {
    eventKey: `new-device:${input.userId}:${deviceHash}`,
    kind: "new_device",
    userId: input.userId,
    payload: { device, at: new Date().toISOString() },
  });
  return "new";
}

/**
 * A signed-in browser's part in {@link recordSignInDevice}, for the sign-in and sign-up actions: reads or sets the
 * device cookie and records the device. A failure is logged, never thrown: the person is signed in either way, and
 * a notice that could not be queued must not turn a sign-in into an error page.
 */
export async function noteSignInDevice(userId: string, cookies: DeviceCookies, requestHeaders: Headers): Promise<void> {
  try {
    await recordSignInDevice({ userId, deviceId: deviceIdOf(cookies), userAgent: requestHeaders.get("user-agent") });
  } catch (error) {
    log().error({ err: error, userId }, "could not record the sign-in device");
  }
}
