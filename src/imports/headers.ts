// The tenant's request headers for an import's origin (e.g. an Authorization for a private
// file): which may be sent, and how they travel. They are sealed with the secrets box under
// the import's object key, so they are in clear only in the fetch that sends them: never in
// a workflow payload, a row or an answer.
import type { SecretBox } from '../secret-box';

/** Headers the fetch sets itself, or that would change how the origin's answer is framed. */
const RESERVED = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'range',
  'if-range',
  'accept-encoding',
  'user-agent',
]);

export const MAX_IMPORT_HEADERS = 20;

/** Why a header may not be sent, or undefined when it may (names compared in lower case). */
export function reservedHeader(name: string): string | undefined {
  const n = name.toLowerCase();
  if (RESERVED.has(n) || n.startsWith('proxy-') || n.startsWith(':')) return `headers may not set ${n}: the import sets it itself`;
  return undefined;
}

function context(storageKey: string): string {
  return `import-headers\n${storageKey}`;
}

export function sealImportHeaders(box: SecretBox, storageKey: string, headers: Record<string, string>): string {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return box.seal(JSON.stringify(lower), context(storageKey));
}

export function openImportHeaders(box: SecretBox, storageKey: string, sealed: string): Record<string, string> {
  return JSON.parse(box.open(sealed, context(storageKey))) as Record<string, string>;
}
