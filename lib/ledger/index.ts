/**
 * lib/ledger: the claim module, and the one way into it: code outside lib/ledger imports from here, never from
 * its files (tests/unit/app-boundary.test.ts; lib/db.ts is the one exception it names). See ARCHITECTURE.md.
 */
export * from "./keys";
export * from "./fingerprint";
export * from "./entry";
export * from "./claim";
export * from "./claim-runner";
export * from "./decided-claim";
export * from "./payment-statement";
export * from "./transfer-statement";
export * from "./transfer-reversal";
export * from "./payouts";
export * from "./reward-statement";
export * from "./topup-admission";
export * from "./take-over";
export * from "./transitions";
export * from "./outcome";
export * from "./views";
export * from "./replay-cache";
export { newLeaseOwner, WORKER_ID } from "./worker";
export * from "./queryable";
export * from "./retry";
export * from "./db-errors";
export * from "./constants";
export * from "./view-schemas";
export * from "./refunds";
export * from "./dispute-entries";
export * from "./response-template";
export * from "./webhook-settlement";
