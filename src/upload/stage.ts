// Phase "receive": a request body streams to this attempt's own object (a key no other
// attempt shares), counted, hashed and checked against its declared length and SHA-256.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { problem, Problem } from '../errors';
import { metrics } from '../metrics';
import type { ObjectStore } from '../storage/store';
import { BodyMeter } from './body-meter';
import { onClientGone } from './client-gone';
import { stagedCopy } from './staged-copy';
import type { StagedCopy, UploadRequest } from './types';

/**
 * With `exact: false` the body's length is unknown (a form's file part): `req.declaredBytes` is
 * its maximum. `keyPrefix`: where the key's objects go (src/placement/placement.ts); while it is
 * still being decided the body is already piped, so its own failure (a form's file past its
 * limit) has a listener.
 */
export async function stageBody(
  store: ObjectStore,
  keyPrefix: string | Promise<string>,
  req: UploadRequest,
  body: Readable,
  opts: { exact: boolean } = { exact: true },
): Promise<StagedCopy> {
  const attemptId = randomUUID();
  let storageKey: string | undefined;
  const meter = new BodyMeter(req.declaredBytes, undefined, opts.exact);
  const stopWatching = onClientGone(body, () => meter.abort());
  const piped = pipeline(body, meter).catch(() => {}); // the meter's own failure is the verdict, read below
  try {
    const prefix = await Promise.resolve(keyPrefix).catch((err: unknown) => {
      meter.destroy(); // nothing will read it: the body goes, the refusal is the answer
      throw err;
    });
    storageKey = `${prefix}${attemptId}`;
    await store.put(storageKey, meter, { contentType: req.contentType, contentLength: opts.exact ? req.declaredBytes : undefined });
    // The store may answer as soon as it has Content-Length bytes; the meter's verdict
    // (length, hash) comes when the body ends.
    await finished(meter, { readable: false });
  } catch (err) {
    if (storageKey) await store.delete(storageKey).catch(() => {}); // an attempt's object no upload names: housekeeping removes it
    if (meter.failure) throw meter.failure;
    // A refusal the body was destroyed with (a form's file past its limit) is the answer.
    if (err instanceof Problem) throw err;
    if ((body as { complete?: boolean }).complete === false)
      throw problem('body_incomplete', `Connection closed after ${meter.bytes} of ${req.declaredBytes} bytes.`);
    throw problem('storage_unavailable', undefined, { cause: err });
  } finally {
    stopWatching();
    await piped;
  }
  metrics.bytesReceived.inc(meter.bytes);
  const copy = stagedCopy({
    attemptId,
    fingerprint: req.fingerprint,
    storageKey,
    bytes: meter.bytes,
    sha256: meter.sha256,
    head: meter.head,
  });
  if (req.declaredSha256 && req.declaredSha256 !== copy.sha256) {
    await store.delete(copy.storageKey).catch(() => {}); // a fresh attempt's own object: no upload names it
    throw problem('checksum_mismatch', `X-File-Sha256 is ${req.declaredSha256} but the received bytes hash to ${copy.sha256}.`);
  }
  return copy;
}
