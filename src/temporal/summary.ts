// What the Temporal UI shows for an upload run: a summary, one line of at most 200 bytes,
// rendered as Markdown, so a value a client chose (the file name) is escaped and cut to fit,
// never passed through as markup. (No details: the tenant and the key are the run's search
// attributes, which the UI shows already.)
import type { UploadRequest } from '../upload/types';

export const SUMMARY_MAX_BYTES = 200;

/** Backslash-escapes Markdown and HTML punctuation; control characters become spaces. */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\x00-\x1f\x7f\u2028\u2029]/g, ' ').replace(/[\\`*_{}[\]()#+\-.!|<>~&"']/g, (ch) => `\\${ch}`);
}

/** At most `maxBytes` of UTF-8, cut at a character boundary, with an ellipsis when cut. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const ellipsis = '…';
  let out = '';
  let bytes = Buffer.byteLength(ellipsis);
  for (const ch of text) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > maxBytes) break;
    out += ch;
    bytes += n;
  }
  // A trailing lone backslash would escape the ellipsis instead of the cut character.
  return `${out.replace(/(?<!\\)((?:\\\\)*)\\$/, '$1')}${ellipsis}`;
}

export function uploadSummary(req: Pick<UploadRequest, 'fileName' | 'contentType' | 'declaredBytes'>): string {
  const tail = ` · ${escapeMarkdown(req.contentType)} · ${req.declaredBytes} bytes`;
  const name = req.fileName === null ? '(unnamed)' : escapeMarkdown(req.fileName);
  return truncateUtf8(
    `Upload ${truncateUtf8(name, Math.max(16, SUMMARY_MAX_BYTES - 7 - Buffer.byteLength(tail)))}${tail}`,
    SUMMARY_MAX_BYTES,
  );
}
