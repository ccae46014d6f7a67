/**
 * This process's identity as a lease owner (contract section 2: "the row says who is working on it").
 * Host and pid make a stuck row traceable to a process; the random suffix keeps two processes that reuse
 * a pid (a restart in a container) apart.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

export const WORKER_ID = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;

/**
 * A lease owner for one request: {@link WORKER_ID} plus 6 random bytes. Unique per request, so that a request
 * whose claim committed while its connection died can recognise the row as its own when it retries
 * (lib/ledger/claim.ts), and two concurrent duplicates in one process never mistake each other's claim for
 * their own.
 */
export function newLeaseOwner(): string {
  return `${WORKER_ID}/${randomBytes(6).toString("hex")}`;
}
