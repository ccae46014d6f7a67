/**
 * Duplicate storms answered by one run: identical operation requests (same user, same type, same key and
 * parameters) that arrive while one of them is running wait for its outcome instead of each running the claim,
 * its transaction and the loser's read (contract sections 1 and 3). The measured cost per request of a storm is
 * in docs/benchmarks.md ("The replay path").
 */
import { env } from "../env";
import { canonicalParams, type OperationResult } from "../ledger";
import { countOperation } from "../metrics/registry";

/** The run of each identity in flight in this process; an entry lives exactly as long as its run. */
const running = new Map<string, Promise<OperationResult>>();

/** What a waiting request saw of the running one: its outcome, its error, or nothing within the wait. */
type Observed = { readonly kind: "outcome"; readonly result: OperationResult } | { readonly kind: "error" | "timeout" };

/** `running`'s outcome or error, or `timeout` when it has not settled within `waitMs`. Never rejects. */
function observeWithin(running: Promise<OperationResult>, waitMs: number): Promise<Observed> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Observed>((resolve) => {
    timer = setTimeout(() => resolve({ kind: "timeout" }), waitMs);
  });
  const settled = running.then(
    (result): Observed => ({ kind: "outcome", result }),
    (): Observed => ({ kind: "error" }),
  );
  return Promise.race([settled, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Runs `run` for an operation request, or, when an identical request of this process is already running, waits for
 * that one (contract section 3: a duplicate waits up to IDEMPOTENCY_WAIT_MS for the first response, then gets
 * `409 request_in_progress`) instead of running the claim, its transaction and the loser's read itself.
 *
 * What the waiting request answers, by what the running one did within `waitMs` of the waiting one's arrival:
 * - a stored response (`response`): that status and body, byte for byte, as a replay (`replayed: true`, the
 *   `Idempotent-Replayed` header), whether the running request claimed the key or replayed it itself: a stored
 *   first response never changes once written (contract section 3);
 * - `in_progress` (the first response was not stored within the running request's wait), or still running when
 *   `waitMs` has passed: `in_progress` with Retry-After 1 s, as the ledger's own wait answers
 *   (lib/ledger/claim-runner.ts `awaitStoredEntry`);
 * - anything else (`refused`, `mismatch`) or a thrown error: nothing is shared, the waiting request runs `run`
 *   itself, exactly as it would have without this function.
 * Requests of other processes are not seen here; the ledger's claim decides between them as always.
 *
 * @param type the operation type (`"payment"`, `"topup"`): part of the identity and the metrics label.
 * @param userId the authenticated user (never from the body): part of the identity.
 * @param input the validated input, flat strings and integers (ref id, amount in minor units, currency): the key's
 *   ref id and the fingerprinted parameters, so two requests share a run only when they are the same operation.
 * @param run the operation (e.g. `() => createPayment(...)`), which counts its own outcome in the metrics.
 * @param waitMs how long a waiting request waits for the running one, in ms (default IDEMPOTENCY_WAIT_MS).
 * @returns `run`'s outcome, or the shared outcome above (counted in the claim-outcome metrics like `run`'s).
 * @throws what `run` throws, only when this request ran it itself.
 */
export async function runOnceForIdentical(
  type: string,
  userId: string,
  input: Readonly<Record<string, string | number>>,
  run: () => Promise<OperationResult>,
  waitMs: number = env().IDEMPOTENCY_WAIT_MS,
): Promise<OperationResult> {
  const identity = `${type}\n${userId}\n${canonicalParams(input)}`;
  const first = running.get(identity);
  if (first) {
    const observed = await observeWithin(first, waitMs);
    if (observed.kind === "timeout") {
      const inProgress: OperationResult = { kind: "in_progress", retryAfterS: 1 };
      return countOperation(type, inProgress);
    }
    if (observed.kind === "outcome" && observed.result.kind === "response") {
      const replay: OperationResult = { kind: "response", response: observed.result.response, replayed: true };
      return countOperation(type, replay);
    }
    if (observed.kind === "outcome" && observed.result.kind === "in_progress") {
      return countOperation(type, observed.result);
    }
    return await run();
  }
  const own = run();
  running.set(identity, own);
  try {
    return await own;
  } finally {
    running.delete(identity);
  }
}
