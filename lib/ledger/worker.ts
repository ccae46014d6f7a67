/**
 * This process's identity as a lease owner (contract section 2: "the row says who is working on it").
 * Host and pid make a stuck row traceable to a process; the random suffix keeps two processes that reuse
 * a pid (a restart in a container) apart.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

export const WORKER_ID = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
