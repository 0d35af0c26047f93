// A live page's event stream: the state is read every `everyMs`; when it changes, the page is
// told to refresh (a Turbo stream action, which morphs the page in place). Bounded to ten
// minutes; the browser's EventSource reconnects.
import { streamSSE } from 'hono/streaming';
import type { C } from '../respond';

const REFRESH = '<turbo-stream action="refresh"></turbo-stream>';

export function liveStream(c: C, everyMs: number, state: () => Promise<string | undefined>) {
  return streamSSE(c, async (stream) => {
    let last: string | undefined;
    const until = Date.now() + 600_000;
    while (!stream.aborted && Date.now() < until) {
      const now = await state().catch(() => last);
      if (last !== undefined && now !== last) await stream.writeSSE({ data: REFRESH });
      last = now;
      await stream.sleep(everyMs);
    }
  });
}
