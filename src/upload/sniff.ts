// Recognises a few media types from their first bytes. Pure (workflow-safe): used by the
// API while streaming and by the workflow's content check.

const signatures: { type: string; offset: number; bytes: number[] }[] = [
  { type: 'image/png', offset: 0, bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { type: 'image/jpeg', offset: 0, bytes: [0xff, 0xd8, 0xff] },
  { type: 'image/gif', offset: 0, bytes: [0x47, 0x49, 0x46, 0x38] },
  { type: 'image/webp', offset: 8, bytes: [0x57, 0x45, 0x42, 0x50] },
  { type: 'application/pdf', offset: 0, bytes: [0x25, 0x50, 0x44, 0x46, 0x2d] },
];

/** Types whose declaration is checked against the bytes. */
export const CHECKED_TYPES: ReadonlySet<string> = new Set(signatures.map((s) => s.type));

export function sniff(head: Uint8Array): string | null {
  for (const s of signatures) {
    if (head.length >= s.offset + s.bytes.length && s.bytes.every((b, i) => head[s.offset + i] === b)) return s.type;
  }
  return null;
}

/** A deterministic rejection reason when the declared type is checkable and the bytes disagree. */
export function contentTypeMismatch(declared: string, sniffed: string | null): string | null {
  if (!CHECKED_TYPES.has(declared) || sniffed === declared) return null;
  return `Content-Type is ${declared} but the file content is ${sniffed ?? 'not recognisable as that type'}.`;
}
