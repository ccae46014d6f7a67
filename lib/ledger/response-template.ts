/**
 * A stored first response with a value only PostgreSQL knows when the entry is written: the row's time, the wallet's
 * debt as the lock leaves it (contract section 3: the stored body is the first response, byte for byte). The app
 * builds the body and names where the value goes by putting a slot at those JSON paths; the body is cut there into
 * segments, and SQL puts the value between every two segments, by position (prisma/functions/ledger_fill_body.sql).
 * Nothing is searched for in SQL, so no text a user chose (a reference, a note) can be taken for a slot.
 */
import { randomBytes } from "node:crypto";

/** A response whose body is `segments` joined by the value SQL decides. */
export interface ResponseTemplate {
  readonly status: number;
  /** The body cut at every slot; at least one segment (none cut: the body as it is). */
  readonly segments: readonly string[];
}

/**
 * The template of a JSON response: `build` returns the body's value with `slot` wherever the SQL-decided value goes
 * (as a whole JSON string, e.g. `{ createdAt: slot }`, or inside one, e.g. `` `owes ${slot} USD` ``); the slot is a
 * fresh random token, so no other text of the body can hold it. The value SQL puts there must need no JSON escaping
 * (a time, a decimal figure). Pure but for the token.
 */
export function jsonResponseTemplate(status: number, build: (slot: string) => unknown): ResponseTemplate {
  // 128 random bits, hex: a body that held it by chance is as likely as a guessed API token.
  const slot = `slot-${randomBytes(16).toString("hex")}`;
  return { status, segments: JSON.stringify(build(slot)).split(slot) };
}
