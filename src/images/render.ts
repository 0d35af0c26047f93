// Renders one image variant from its source's bytes: the decoded type must be the declared one (only
// sniffed formats are decoded, src/media/image-decoders.ts), the input and the output within
// IMAGE_MAX_PIXELS, the picture upright (EXIF orientation) and never enlarged; no metadata
// is kept (GPS included).
import { decodedTypeMismatch, sharp } from '../media/image-decoders';
import { IMAGE_CONTENT_TYPES, type CanonicalSpec } from './spec';

export interface RenderedImage {
  data: Buffer;
  contentType: string;
  width: number;
  height: number;
}

/** A source that cannot give this variant (its bytes, its size): final, never retried. */
export class UnrenderableImage extends Error {}

/** `source`: the picture's bytes (or a file holding them). */
export async function renderImage(
  source: Buffer | string,
  declaredType: string,
  spec: CanonicalSpec,
  maxPixels: number,
): Promise<RenderedImage> {
  const open = () => sharp(source, { failOn: 'error', animated: false, limitInputPixels: maxPixels });
  let meta;
  try {
    meta = await open().metadata();
  } catch (err) {
    throw new UnrenderableImage(`the image could not be decoded: ${(err as Error).message}`);
  }
  const mismatch = decodedTypeMismatch(declaredType, meta);
  if (mismatch) throw new UnrenderableImage(`image refused: ${mismatch}`);
  const inputPixels = (meta.width ?? 0) * (meta.height ?? 0);
  if (inputPixels > maxPixels) throw new UnrenderableImage(`the image has ${inputPixels} pixels, more than the limit of ${maxPixels}`);
  // Never enlarged, so only a box filled whole (cover, contain, fill) can be larger than the source.
  const box = spec.width !== undefined && spec.height !== undefined ? spec.width * spec.height : 0;
  if (box > maxPixels && (spec.fit === 'cover' || spec.fit === 'contain' || spec.fit === 'fill'))
    throw new UnrenderableImage(`the variant would have ${box} pixels, more than the limit of ${maxPixels}`);
  try {
    const { data, info } = await open()
      .rotate()
      .resize({ width: spec.width, height: spec.height, fit: spec.fit, withoutEnlargement: true })
      .toFormat(spec.format, spec.quality === undefined ? {} : { quality: spec.quality })
      .toBuffer({ resolveWithObject: true });
    return { data, contentType: IMAGE_CONTENT_TYPES[spec.format], width: info.width, height: info.height };
  } catch (err) {
    throw new UnrenderableImage(`the image could not be converted: ${(err as Error).message}`);
  }
}
