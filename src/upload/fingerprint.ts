// The request fingerprint: what must be equal for two requests with one key to be "the
// same request". The body itself is represented by its length and declared hash, so the
// fingerprint is known before a single body byte is read.
import { createHash } from 'node:crypto';
import type { UploadLabels } from './types';

export interface FingerprintParts {
  method: string;
  route: string;
  tenantId: string;
  contentLength: number;
  contentType: string;
  sha256: string | null;
  fileName: string | null;
  /** Anything else that identifies the request in its mode (e.g. tus Upload-Metadata). */
  extra?: string;
  /** The upload's own expiry, when sent: the same key with another expiry is another request. */
  expiresAt?: string;
  /** The pipeline it names, when it names one: the same key with another pipeline is another request. */
  pipeline?: string;
  /** Its metadata and tags, when sent: the same key with other ones is another request. */
  labels?: UploadLabels;
  /** The storage target it names, when it names one: the same key with another target is another request. */
  storageTarget?: string;
}

/** `value` with every object's keys in order: the same metadata sent in another key order is the same request. */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortedKeys((value as Record<string, unknown>)[k])]),
  );
}

export function fingerprint(p: FingerprintParts): string {
  const parts: unknown[] = [p.method.toUpperCase(), p.route, p.tenantId, p.contentLength, p.contentType, p.sha256, p.fileName];
  if (p.extra !== undefined) parts.push(p.extra);
  if (p.expiresAt !== undefined) parts.push({ expiresAt: p.expiresAt });
  if (p.pipeline !== undefined) parts.push({ pipeline: p.pipeline });
  if (p.labels !== undefined) parts.push({ labels: sortedKeys(p.labels) });
  if (p.storageTarget !== undefined) parts.push({ storageTarget: p.storageTarget });
  const canonical = JSON.stringify(parts);
  return createHash('sha256').update(canonical).digest('hex');
}
