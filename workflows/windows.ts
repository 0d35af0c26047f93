// Running work over a list a few at a time (re-processing jobs, import batches).
import type { LocalActivityOptions } from '@temporalio/common';

/** A job's own bookkeeping steps (list a page, record outcomes, finish): short, retried until they pass. */
export const JOB_STEP_OPTIONS: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
};

/** Runs `fn` over `items` with at most `width` at a time, keeping the order of the results. */
export async function inWindows<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]!);
      }
    }),
  );
  return results;
}
