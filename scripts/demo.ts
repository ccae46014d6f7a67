/**
 * `npm run demo`: the wallet with embedded PostgreSQL, Redis (when installed), the sandbox bank, the reconciler
 * and the built app (`next start`) on 127.0.0.1:`PORT`. See scripts/lib/local-stack.ts; `npm run dev` is the
 * same stack with `next dev` in front.
 */
import { runLocalStack } from "./lib/local-stack";

runLocalStack("demo");
