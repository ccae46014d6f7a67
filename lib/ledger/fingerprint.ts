/**
 * Request fingerprints (contract section 1): a canonical SHA-256 of the parameters that define an operation.
 * The same key with a different fingerprint is refused on every path, and the stored parameters let the
 * refusal name the fields that differ (contract section 3: `"fields": ["amount"]`).
 */
import { createHash } from "node:crypto";

/** The parameters of an operation: flat, with string or integer values only (amounts in minor units). */
export type OperationParams = Readonly<Record<string, string | number>>;

/**
 * Canonical text of `params`: keys sorted by code unit, JSON-encoded values, no whitespace.
 * Two parameter maps have the same canonical text exactly when they are equal.
 * Throws `TypeError` for a non-integer number (amounts are integers in minor units).
 */
export function canonicalParams(params: OperationParams): string {
  const keys = Object.keys(params).sort();
  const parts = keys.map((key) => {
    const value = params[key];
    if (typeof value === "number" && !Number.isSafeInteger(value)) {
      throw new TypeError(`fingerprint: ${key} must be a safe integer`);
    }
    return `${JSON.stringify(key)}:${JSON.stringify(value)}`;
  });
  return `{${parts.join(",")}}`;
}

/** SHA-256 (lowercase hex, 64 characters) of the canonical parameters, prefixed by the operation type. */
export function fingerprint(type: string, params: OperationParams): string {
  return createHash("sha256")
    .update(`${type}\n${canonicalParams(params)}`)
    .digest("hex");
}

/**
 * Names of the fields whose values differ between the stored parameters and a new request's, sorted.
 * A field present on one side only counts as different.
 */
export function differingFields(stored: OperationParams, requested: OperationParams): string[] {
  const names = new Set([...Object.keys(stored), ...Object.keys(requested)]);
  return [...names].filter((name) => stored[name] !== requested[name]).sort();
}
