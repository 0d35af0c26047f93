// Running work over a list a few at a time: pure, so workflows (re-processing jobs, import
// batches, storage migrations) and activities (a page of small moves) share it.

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
