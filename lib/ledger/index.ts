/** lib/ledger: the claim module. See ARCHITECTURE.md for how the pieces fit. */
export * from "./keys";
export * from "./fingerprint";
export * from "./entry";
export * from "./claim";
export * from "./transitions";
export * from "./outcome";
export * from "./views";
export * from "./replay-cache";
export { newLeaseOwner, WORKER_ID } from "./worker";
