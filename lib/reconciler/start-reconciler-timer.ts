/**
 * The reconciler on a timer, for `npm run demo` (and `npm run reconcile -- --watch`): one pass, then a pause of
 * `intervalMs`, then the next pass. A pass never overlaps the previous one: the next is scheduled only after the
 * previous finished, however long it took.
 */
import { log } from "../log";
import { reconcileOnce, type ReconcileOptions, type ReconcileResult } from "./reconcile-once";

export interface ReconcilerTimerOptions {
  /** Passed to every {@link reconcileOnce} call. */
  reconcile?: ReconcileOptions;
  /** Called after each pass with its result (e.g. the CLI prints it). */
  onResult?: (result: ReconcileResult) => void;
  /** Called when a pass throws (database down); the timer keeps going. Default: logged as an error. */
  onError?: (error: unknown) => void;
  /** Run the first pass at once instead of after `intervalMs`. Default false. */
  runImmediately?: boolean;
  /** Keep the process alive while the timer runs (a CLI whose only work is the timer). Default false. */
  keepProcessAlive?: boolean;
}

/**
 * Starts passes every `intervalMs` milliseconds (from the end of one pass to the start of the next).
 *
 * Returns `stop`: it cancels the next pass and resolves once a pass in progress has finished, so a caller can
 * close the database afterwards. Calling it twice is harmless. The timer does not keep the process alive on its
 * own (`unref`) unless `keepProcessAlive` is set. Never throws: a failed pass is reported to `onError` and the next one runs on schedule.
 * Throws `RangeError` when `intervalMs` is not a positive integer (RECONCILE_INTERVAL_MS = 0 means "no timer":
 * the caller should not start one).
 */
export function startReconcilerTimer(intervalMs: number, options: ReconcilerTimerOptions = {}): () => Promise<void> {
  if (!Number.isInteger(intervalMs) || intervalMs <= 0) {
    throw new RangeError(`startReconcilerTimer: intervalMs must be a positive integer, got ${String(intervalMs)}`);
  }
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | null = null;

  const runPass = async () => {
    try {
      const result = await reconcileOnce(options.reconcile);
      options.onResult?.(result);
    } catch (error) {
      if (options.onError) options.onError(error);
      else log().error({ err: error }, "reconciler pass failed");
    }
  };

  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      current = runPass().finally(() => {
        current = null;
        schedule(intervalMs);
      });
    }, delayMs);
    if (!options.keepProcessAlive) timer.unref();
  };

  schedule(options.runImmediately ? 0 : intervalMs);

  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    timer = undefined;
    await current;
  };
}
