// Keeps Node's event loop from running empty while `work` runs. A promise that only V8
// background work settles (a WebAssembly compile) leaves the loop with no handle; Node then
// drains V8's worker tasks from `NodePlatform::DrainTasks` before it runs the foreground
// tasks they may wait for, and a task waiting for a main-thread GC never finishes
// (nodejs/node#54918). A ref'd timer keeps the main thread in the loop instead.
export async function holdingEventLoop<T>(work: () => Promise<T>): Promise<T> {
  const hold = setInterval(() => {}, 1 << 30);
  try {
    return await work();
  } finally {
    clearInterval(hold);
  }
}
