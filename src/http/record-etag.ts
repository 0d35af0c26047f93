// The record's version as an entity tag: GET /v1/uploads/{id} answers it, PATCH names it in
// If-Match. Strong and opaque to clients: `"3"` is version 3.
import { problem } from '../errors';

export function recordEtag(version: number): string {
  return `"${version}"`;
}

/** The version If-Match names: 428 without one (or with `*`), 400 when it is no version's tag. */
export function parseIfMatch(value: string | undefined): number {
  const v = value?.trim();
  if (!v || v === '*')
    throw problem('record_version_required', "Send If-Match with the record's version as GET /v1/uploads/{id} answered it in ETag.");
  const m = /^(?:W\/)?"([1-9][0-9]{0,9})"$/.exec(v);
  const version = m ? Number(m[1]) : NaN;
  if (!Number.isSafeInteger(version) || version > 2_147_483_647)
    throw problem('header_invalid', 'If-Match must be one entity tag as ETag answered it, like "3".');
  return version;
}
