// Recognises the media types Oncely checks from their first bytes. Pure (workflow-safe): used
// by the API while streaming and by the workflow's content check.

const signatures: { type: string; offset: number; bytes: number[] }[] = [
  { type: 'image/png', offset: 0, bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { type: 'image/jpeg', offset: 0, bytes: [0xff, 0xd8, 0xff] },
  { type: 'image/gif', offset: 0, bytes: [0x47, 0x49, 0x46, 0x38] },
  { type: 'image/webp', offset: 8, bytes: [0x57, 0x45, 0x42, 0x50] },
  { type: 'application/pdf', offset: 0, bytes: [0x25, 0x50, 0x44, 0x46, 0x2d] },
  // TIFF, little- and big-endian (BigTIFF too: 43 instead of 42).
  { type: 'image/tiff', offset: 0, bytes: [0x49, 0x49, 0x2a, 0x00] },
  { type: 'image/tiff', offset: 0, bytes: [0x4d, 0x4d, 0x00, 0x2a] },
  { type: 'image/tiff', offset: 0, bytes: [0x49, 0x49, 0x2b, 0x00] },
  { type: 'image/tiff', offset: 0, bytes: [0x4d, 0x4d, 0x00, 0x2b] },
];

// ISO-BMFF brands (the ftyp box) of HEIF still images; AVIF's own brands win over them.
const AVIF_BRANDS = new Set(['avif', 'avis']);
const HEIC_BRANDS = new Set(['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx', 'mif1', 'msf1']);

const LEGACY_CHECKED = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf'];

/** Types whose declaration is checked against the bytes (upload workflow revision 5 on). */
export const CHECKED_TYPES: ReadonlySet<string> = new Set([...LEGACY_CHECKED, 'image/tiff', 'image/avif', 'image/heic']);
/** What runs of revisions up to 4 check: replays of those histories must decide as they did. */
export const CHECKED_TYPES_BEFORE_R5: ReadonlySet<string> = new Set(LEGACY_CHECKED);

const ascii = (head: Uint8Array, at: number) => String.fromCharCode(head[at]!, head[at + 1]!, head[at + 2]!, head[at + 3]!);

/** An ISO-BMFF file's still-image type, from the major and compatible brands its head shows. */
function isoBmffImage(head: Uint8Array): string | null {
  if (head.length < 12 || ascii(head, 4) !== 'ftyp') return null;
  const boxSize = ((head[0]! << 24) | (head[1]! << 16) | (head[2]! << 8) | head[3]!) >>> 0;
  const end = Math.min(boxSize, head.length);
  const brands = [ascii(head, 8)];
  for (let at = 16; at + 4 <= end; at += 4) brands.push(ascii(head, at));
  if (brands.some((b) => AVIF_BRANDS.has(b))) return 'image/avif';
  if (brands.some((b) => HEIC_BRANDS.has(b))) return 'image/heic';
  return null;
}

export function sniff(head: Uint8Array): string | null {
  for (const s of signatures) {
    if (head.length >= s.offset + s.bytes.length && s.bytes.every((b, i) => head[s.offset + i] === b)) return s.type;
  }
  return isoBmffImage(head);
}

/** A deterministic rejection reason when the declared type is checkable and the bytes disagree. */
export function contentTypeMismatch(declared: string, sniffed: string | null, checked: ReadonlySet<string> = CHECKED_TYPES): string | null {
  if (!checked.has(declared) || sniffed === declared) return null;
  return `Content-Type is ${declared} but the file content is ${sniffed ?? 'not recognisable as that type'}.`;
}
