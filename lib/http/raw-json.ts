/**
 * Reads the raw text of a JSON object's top-level members. Amounts must be judged on the token as sent
 * (contract section 1: `1e3`, `100.0`, `"100"` and numbers that JSON.parse silently rounds are refused,
 * case C07), which JSON.parse cannot tell apart once it has made a number. This scanner only finds where
 * each top-level value starts and ends; JSON.parse still does the real parsing and validation.
 */

export type RawMembers = Map<string, string>;

export class RawJsonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RawJsonError";
  }
}

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);

/**
 * Returns each top-level member's name (decoded) and value token (exact source text), for a text that is a
 * JSON object. Throws {@link RawJsonError} when the text is not a single JSON object or a name repeats
 * (a duplicate member would let JSON.parse and this scanner disagree on which value counts).
 */
export function rawTopLevelMembers(text: string): RawMembers {
  let i = 0;
  const skipWhitespace = () => {
    while (i < text.length && WHITESPACE.has(text[i]!)) i++;
  };
  const readString = (): string => {
    const start = i;
    if (text[i] !== '"') throw new RawJsonError("expected a string");
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    if (i >= text.length) throw new RawJsonError("unterminated string");
    i++;
    return text.slice(start, i);
  };
  const readValue = (): string => {
    const start = i;
    const first = text[i];
    if (first === '"') {
      readString();
    } else if (first === "{" || first === "[") {
      let depth = 0;
      while (i < text.length) {
        const c = text[i]!;
        if (c === '"') {
          readString();
          continue;
        }
        if (c === "{" || c === "[") depth++;
        else if (c === "}" || c === "]") depth--;
        i++;
        if (depth === 0) break;
      }
      if (depth !== 0) throw new RawJsonError("unbalanced brackets");
    } else {
      while (i < text.length && !WHITESPACE.has(text[i]!) && text[i] !== "," && text[i] !== "}") i++;
    }
    if (i === start) throw new RawJsonError("expected a value");
    return text.slice(start, i);
  };

  const members: RawMembers = new Map();
  skipWhitespace();
  if (text[i] !== "{") throw new RawJsonError("body must be a JSON object");
  i++;
  skipWhitespace();
  if (text[i] === "}") {
    i++;
  } else {
    for (;;) {
      skipWhitespace();
      const name = JSON.parse(readString()) as string;
      skipWhitespace();
      if (text[i] !== ":") throw new RawJsonError("expected ':'");
      i++;
      skipWhitespace();
      const value = readValue();
      if (members.has(name)) throw new RawJsonError(`duplicate member "${name}"`);
      members.set(name, value);
      skipWhitespace();
      if (text[i] === ",") {
        i++;
        continue;
      }
      if (text[i] === "}") {
        i++;
        break;
      }
      throw new RawJsonError("expected ',' or '}'");
    }
  }
  skipWhitespace();
  if (i !== text.length) throw new RawJsonError("unexpected text after the object");
  return members;
}

/** Contract section 1: a plain JSON integer token, no sign, no leading zero, no fraction or exponent, ≤ 16 digits. */
const AMOUNT_TOKEN_PATTERN = /^[1-9][0-9]{0,15}$/;

/**
 * Parses an amount from its raw token: returns the integer when the token matches
 * {@link AMOUNT_TOKEN_PATTERN} and the value is at most `maxMinor`, otherwise null (case C07).
 * Compared as BigInt so that a 16-digit token above 2^53 is judged exactly, not after rounding.
 */
export function parseAmountToken(token: string | undefined, maxMinor: number): number | null {
  if (token === undefined || !AMOUNT_TOKEN_PATTERN.test(token)) return null;
  if (BigInt(token) > BigInt(maxMinor)) return null;
  return Number(token);
}
