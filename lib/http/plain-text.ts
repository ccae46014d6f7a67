/**
 * One-line text that people type and the database stores as it is: the names of accounts and of API tokens, and
 * any other free text a door accepts (case C31).
 *
 * PostgreSQL refuses U+0000 in a text value (SQLSTATE 22021, "invalid byte sequence for encoding UTF8: 0x00"), so a
 * name holding one passed every length check and failed in the INSERT, a 500. The rule refuses it at validation, with
 * the other control characters (Unicode general category Cc: U+0000..U+001F and U+007F..U+009F): line breaks, tabs
 * and terminal escape sequences have no place in a one-line name either, and refusing the whole category is one rule
 * people can read ("no control characters") instead of a special case for one code point.
 */

/** Any control character (Unicode general category Cc). */
const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * True when `text` holds no control character (U+0000..U+001F, U+007F..U+009F): fit for a one-line name stored in a
 * text column. Length is the caller's rule. Never throws.
 */
export function isPlainLine(text: string): boolean {
  return !CONTROL_CHARACTER.test(text);
}
