// sharp (libvips) picks its decoder from the bytes, not from the declared type, so a file
// declared image/png could reach any loader libvips has (SVG, JPEG XL, the VIPS format, …),
// each a place for the next decoder advisory. Every loader is blocked for the whole process
// except those of the types the image step takes (IMAGE_TYPES), and a picture whose decoded
// format is not its declared type is refused before anything is rendered from it.
import sharp, { type Metadata } from 'sharp';

sharp.block({ operation: ['VipsForeignLoad'] });
sharp.unblock({
  operation: [
    'VipsForeignLoadJpeg',
    'VipsForeignLoadPng',
    'VipsForeignLoadWebp',
    'VipsForeignLoadNsgif',
    'VipsForeignLoadTiff',
    // AVIF (libheif with its AV1 decoder; the build has no HEVC decoder).
    'VipsForeignLoadHeif',
  ],
});

/** The media type of what sharp decoded, or null when it is none the image step takes. */
export function decodedImageType(meta: Pick<Metadata, 'format' | 'compression'>): string | null {
  switch (meta.format) {
    case 'jpeg':
    case 'png':
    case 'webp':
    case 'gif':
    case 'tiff':
      return `image/${meta.format}`;
    case 'heif':
      return meta.compression === 'av1' ? 'image/avif' : null;
    default:
      return null;
  }
}

/** Why the decoded picture is not the declared type, or null when it is. */
export function decodedTypeMismatch(declared: string, meta: Pick<Metadata, 'format' | 'compression'>): string | null {
  const decoded = decodedImageType(meta);
  if (decoded === declared.toLowerCase()) return null;
  const what = decoded ?? `${meta.format ?? 'unknown'}${meta.compression ? ` (${meta.compression})` : ''}`;
  return `the file is declared ${declared} but decodes as ${what}`;
}

export { sharp };
