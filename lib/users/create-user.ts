import { withTransaction } from "../db";
import { signUpWithPassword } from "../auth/sign-up-with-password";

export type CreateUserResult = { kind: "created"; userId: string } | { kind: "duplicate_email" };

/**
 * Creates an account outside any browser request (the `npm run users` CLI, tests, seeding), with the same
 * rules as the sign-up page: better-auth's sign-up (argon2id hash, folded email, unique email), then, for an
 * admin, the role set by a plain UPDATE (sign-up itself can never set `role`, contract section 4).
 *
 * Sign-up also opens a session; nobody holds its token here, so it is deleted in the same transaction as the
 * role change rather than left as a live credential for 7 days.
 *
 * Not atomic with the sign-up: if the process dies between the two steps, the account exists with role
 * 'user' (never the other way round, so a failure can only under-privilege).
 *
 * @param input.email the address (stored lowercased).
 * @param input.password 10..128 characters.
 * @param input.name display name; defaults to the part of the email before `@`.
 * @param input.role 'user' or 'admin'.
 * @returns `created` with the new user's id, or `duplicate_email` when the email is taken (also when a
 *   concurrent creation won the race).
 * @throws RangeError when the email or password is invalid (callers validate first); database errors.
 */
export async function createUser(input: {
  email: string;
  password: string;
  name?: string | undefined;
  role: "user" | "admin";
}): Promise<CreateUserResult> {
  const signUp = await signUpWithPassword(
    { email: input.email, password: input.password, name: input.name },
    new Headers(),
  );
  switch (signUp.kind) {
    case "duplicate_email":
      return { kind: "duplicate_email" };
    case "invalid_email":
      throw new RangeError("invalid email address");
    case "invalid_password":
      throw new RangeError("password must be 10..128 characters");
    case "invalid_name":
      throw new RangeError("name must be 1..100 characters without control characters");
    case "throttled":
      // Only network requests are throttled; this runs outside any (createUser is for CLIs and tests).
      throw new Error(`sign-up throttled outside a request (retry after ${signUp.retryAfterS} s)`);
    case "created":
      break;
  }
  await withTransaction(async (client) => {
    if (input.role === "admin") {
      await client.query(`UPDATE "user" SET "role" = 'admin', "updatedAt" = now() WHERE "id" = $1`, [signUp.userId]);
    }
    await client.query(`DELETE FROM "session" WHERE "token" = $1`, [signUp.sessionToken]);
  });
  return { kind: "created", userId: signUp.userId };
}
