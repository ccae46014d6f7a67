/**
 * References people can read (docs/decisions/055): each movement's short reference, such as `PY-7K3Q-9D2M`, derived
 * deterministically from its ledger entry's id, and read back to that id. The full reference (the entry's ref id:
 * a top-up's refId, a payment's orderId, a form's `web:<uuid>`) stays in the API and on the movement's own page.
 *
 * The two letters say what the movement is; the eight characters are the entry id's low 40 bits, scrambled by a
 * fixed 4-round Feistel permutation (so consecutive movements do not read as a counter, and the mapping stays a
 * bijection: two entries never share a reference, and a reference names exactly one id), written in Crockford's
 * base32 (no I, L, O or U; read case-insensitively, with O as 0 and I or L as 1). An id of 2^40 or more (a ledger of
 * over a trillion entries) gets its higher bits as more characters in front, so the mapping stays total.
 *
 * Not a secret and not a capability: the movement page and the search read a reference only among the signed-in
 * user's own entries.
 */
import type { LedgerType } from "../ledger";

/** The two letters of each kind of movement. */
export const REFERENCE_PREFIXES: Readonly<Record<LedgerType, string>> = {
  topup: "TP",
  payment: "PY",
  reward: "RW",
  adjustment: "AJ",
  refund: "RF",
  chargeback: "CB",
  chargeback_reversal: "CR",
  payout: "WD",
  payout_return: "WR",
  transfer: "TS",
  transfer_in: "TR",
  transfer_reversal: "RS",
  transfer_reversal_out: "RR",
};

/** Each prefix's kind, for reading a reference back. */
const PREFIX_TYPES = new Map(
  (Object.entries(REFERENCE_PREFIXES) as [LedgerType, string][]).map(([type, prefix]) => [prefix, type]),
);

/** The shape of the reference of any entry id below 2^40: two letters, then two groups of four characters. */
export const READABLE_REFERENCE_PATTERN = /^[A-Z]{2}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/** The permuted part: 40 bits, two 20-bit halves, eight base32 characters. */
const LOW_BITS = 40n;
const HALF_BITS = 20n;
const HALF_MASK = (1n << HALF_BITS) - 1n;
const LOW_MASK = (1n << LOW_BITS) - 1n;
/** Round constants of the permutation (arbitrary odd numbers; changing them changes every reference). */
const ROUND_KEYS = [0x5bd1en, 0x2c6a3n, 0x9e377n, 0x7f4a1n] as const;
/**
 * Longest text {@link parseReadableReference} reads: a prefix, its dash and 13 characters with dashes (an id up to
 * 2^63, the column's bound) is about 20; 40 leaves room for spaces a person pastes and bounds the work.
 */
const REFERENCE_TEXT_MAX = 40;

/** The round function: a 20-bit mix of one half and the round's key. */
function round(half: bigint, key: bigint): bigint {
  const mixed = ((half * 0x9e3b1n) ^ key ^ (half >> 7n)) & HALF_MASK;
  return (mixed * 0x2f5n + (mixed >> 11n)) & HALF_MASK;
}

function permute(value: bigint): bigint {
  let left = value >> HALF_BITS;
  let right = value & HALF_MASK;
  for (const key of ROUND_KEYS) [left, right] = [right, left ^ round(right, key)];
  return (left << HALF_BITS) | right;
}

function unpermute(value: bigint): bigint {
  let left = value >> HALF_BITS;
  let right = value & HALF_MASK;
  for (const key of [...ROUND_KEYS].reverse()) [left, right] = [right ^ round(left, key), left];
  return (left << HALF_BITS) | right;
}

function toBase32(value: bigint, length: number): string {
  let text = "";
  let rest = value;
  for (let i = 0; i < length || rest > 0n; i++) {
    text = ALPHABET[Number(rest & 31n)] + text;
    rest >>= 5n;
  }
  return text;
}

/**
 * The readable reference of the entry `id` (a positive safe integer) of `type`: `PY-7K3Q-9D2M`. Pure and
 * deterministic. Throws RangeError for an id that is not a positive safe integer (no ledger entry has one).
 */
export function readableReference(type: LedgerType, id: number): string {
  if (!Number.isSafeInteger(id) || id < 1) throw new RangeError(`readableReference: bad entry id ${id}`);
  const whole = BigInt(id);
  const high = whole >> LOW_BITS;
  const digits = (high > 0n ? toBase32(high, 0) : "") + toBase32(permute(whole & LOW_MASK), 8);
  const groups = digits.match(/.{1,4}(?=(.{4})*$)/g) ?? [digits];
  return `${REFERENCE_PREFIXES[type]}-${groups.join("-")}`;
}

/** A reference read back: the entry id, and the kind its prefix names (when the text had one). */
export interface ParsedReference {
  readonly id: number;
  readonly type: LedgerType | null;
}

/**
 * Reads `text` as a readable reference, as a person might type or paste it: case-insensitive, spaces and dashes
 * anywhere, the two-letter prefix optional, Crockford's look-alikes (O for 0, I and L for 1). Returns the entry id
 * and the prefix's kind, or null when the text is not one (too long, an unknown prefix, a character outside the
 * alphabet, fewer than eight characters, an id past the safe integers). Never throws.
 */
export function parseReadableReference(text: string): ParsedReference | null {
  if (text.length > REFERENCE_TEXT_MAX) return null;
  const compact = text.toUpperCase().replace(/[\s-]/g, "");
  // Ten characters or more may start with a prefix; eight are the digits alone.
  const prefixed = compact.length >= 10 ? PREFIX_TYPES.get(compact.slice(0, 2)) : undefined;
  const type = prefixed ?? null;
  const digits = (prefixed ? compact.slice(2) : compact).replace(/O/g, "0").replace(/[IL]/g, "1");
  if (digits.length < 8 || !/^[0-9A-HJKMNP-TV-Z]+$/.test(digits)) return null;
  let value = 0n;
  for (const char of digits) value = (value << 5n) | BigInt(ALPHABET.indexOf(char));
  const low = value & LOW_MASK;
  const id = ((value >> LOW_BITS) << LOW_BITS) | unpermute(low);
  if (id < 1n || id > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return { id: Number(id), type };
}
