// A run's result if it arrives within a wait budget (`Prefer: wait=N`), else undefined: the
// run goes on and the caller answers 202. A result that arrives later is dropped quietly.
export async function resultWithin<T>(result: Promise<T>, ms: number): Promise<T | undefined> {
  if (ms <= 0) {
    result.catch(() => {}); // the run goes on; its outcome is read from the key later
    return undefined;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([result, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
    result.catch(() => {}); // a late outcome: the caller already answered 202
  }
}
