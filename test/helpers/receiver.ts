// An UploadReceiver over a test stack's own services, wired as the API's are
// (src/services.ts), for tests that drive the upload path below HTTP (counting its RPCs,
// offering chosen copies). No replay cache; the downstream is the test's when it names one.
import type { ReceiveDeps, UploadReceiver } from '../../src/upload/receive';
import { createServices } from '../../src/services';
import type { TestStack } from './stack';

export function stackReceiver(stack: TestStack, downstream?: ReceiveDeps['downstream']): UploadReceiver {
  const { pool, store } = stack.runtime;
  const box = { sign: () => '', verify: () => false } as never;
  return createServices(
    { config: { ...stack.config, REPLAY_CACHE_MIB: 0 }, pool, store, temporal: stack.temporal, box },
    { receiver: downstream ? { downstream } : {} },
  ).receiver;
}
