/** Whether an account's address is confirmed (docs/decisions/054-mail-outbox.md). */
import { pool } from "../db";

/**
 * Whether `userId` has confirmed its address (better-auth's `emailVerified`).
 * @throws database errors.
 */
export async function isAddressConfirmed(userId: string): Promise<boolean> {
  const { rows } = await pool().query<{ verified: boolean }>(
    `SELECT "emailVerified" AS verified FROM "user" WHERE id = $1`,
    [userId],
  );
  return rows[0]?.verified === true;
}
