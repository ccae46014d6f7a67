/**
 * Words that must never reach people on the wallet, sign-in, sign-up, tokens and admin pages: the API's vocabulary
 * for programmers. "key" and "parameters" as whole words ("keyboard" is fine). Read by e2e/helpers.ts (the pages'
 * visible text) and tests/unit/admin-words.test.ts (the details lib/ writes for admins to read).
 */
export const JARGON = [/\bJSON\b/i, /\bminor units?\b/i, /\bkeys?\b/i, /\bparameters?\b/i] as const;

/** The jargon words found in `text` (empty when none). */
export function jargonIn(text: string): string[] {
  return JARGON.flatMap((pattern) => text.match(new RegExp(pattern.source, "gi")) ?? []);
}
