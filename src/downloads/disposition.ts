// Content-Disposition per RFC 6266 (the content-disposition package writes it): an ASCII
// `filename` and, for names that need it, `filename*` in RFC 8187's UTF-8 encoding.
import { create } from 'content-disposition';

export type Disposition = 'inline' | 'attachment';

/** Types a browser would run or render as a document (scripts, markup): never inline. */
export function isBrowserActive(contentType: string): boolean {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return (
    type === 'text/html' ||
    type === 'application/xhtml+xml' ||
    type === 'image/svg+xml' ||
    type === 'text/xml' ||
    type === 'application/xml' ||
    type === 'text/xsl' ||
    type.endsWith('+xml') ||
    type.includes('javascript') ||
    type.includes('ecmascript') ||
    type === 'application/wasm'
  );
}

/** What markup is labelled with where no sandbox can be attached (a presigned store URL). */
export const NEUTRAL_CONTENT_TYPE = 'application/octet-stream';

/** The headers a stored file is handed to a browser with. */
export interface Presentation {
  disposition: Disposition;
  contentDisposition: string;
  contentType: string;
  /** `Content-Security-Policy: sandbox` is due (markup served by the API itself). */
  sandbox: boolean;
}

/**
 * The one rule for handing out stored files, whoever serves them: markup and scripts are
 * always attachments; the API adds a sandbox to them, and a URL served by the store, which
 * cannot add one (`canSandbox` false), labels them with a neutral type instead.
 */
export function presentation(contentType: string, fileName: string | null, wanted: Disposition, canSandbox: boolean): Presentation {
  const active = isBrowserActive(contentType);
  const disposition = active ? 'attachment' : wanted;
  return {
    disposition,
    contentDisposition: contentDisposition(disposition, fileName),
    contentType: active && !canSandbox ? NEUTRAL_CONTENT_TYPE : contentType,
    sandbox: active && canSandbox,
  };
}

/**
 * The header for `fileName` (null: none stored) under `disposition`. Control characters,
 * bidirectional overrides and path separators are removed from the name first, so neither the
 * quoted fallback nor the decoded `filename*` can carry CR/LF or a directory, or display as
 * another name.
 */
export function contentDisposition(disposition: Disposition, fileName: string | null): string {
  const name = fileName
    ?.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, '')
    .replace(/[/\\]/g, '_')
    .trim();
  if (!name) return disposition;
  return create(name, { type: disposition, fallback: asciiFallback(name) });
}

/** The name in printable ASCII: accents dropped, other characters (and `"`) replaced by `_`. */
function asciiFallback(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]|"/g, '_');
}
