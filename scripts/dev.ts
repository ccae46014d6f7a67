/**
 * `npm run dev`: the demo's stack (embedded PostgreSQL, Redis when installed, the sandbox bank, the reconciler,
 * the same migrations, seed users, ports and `.data/runtime.json`) with `next dev` in front: pages and route
 * handlers recompile on request and edits show without a restart. See scripts/lib/local-stack.ts.
 */
import { runLocalStack } from "./lib/local-stack";

runLocalStack("dev");
