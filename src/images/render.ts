// Renders one image variant from its source's bytes: the decoded type must be the declared one (only
// sniffed formats are decoded, src/media/image-decoders.ts), the input and the output within
// IMAGE_MAX_PIXELS, the picture upright (EXIF orientation) and never larger than its source
// (for any fit), its cost (pixels × format) within IMAGE_MAX_RENDER_COST; no metadata is kept
// (GPS included).
import { decodedTypeMismatch, sharp } from '../media/image-decoders';
import { IMAGE_CONTENT_TYPES, outputSize, renderCost, type CanonicalSpec } from './spec';

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
  limits: { maxPixels: number; maxCost: number },
): Promise<RenderedImage> {
  const { maxPixels } = limits;
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
  // Never larger than the source, whatever the fit (a box filled whole is scaled down to fit
  // within it); its cost known before any pixel is decoded.
  const upright = (meta.orientation ?? 1) >= 5;
  const size = { width: (upright ? meta.height : meta.width) ?? 1, height: (upright ? meta.width : meta.height) ?? 1 };
  const out = outputSize(spec, size);
  const cost = renderCost(out.width, out.height, spec.format);
  if (cost > limits.maxCost)
    throw new UnrenderableImage(
      `the variant (${out.width}×${out.height} ${spec.format}) would cost ${cost.toFixed(1)} megapixels of JPEG, more than the limit of ${limits.maxCost} (IMAGE_MAX_RENDER_COST)`,
    );
  try {
    const { data, info } = await open()
      .rotate()
      .resize({ ...out.box, fit: spec.fit, withoutEnlargement: true })
      .toFormat(spec.format, spec.quality === undefined ? {} : { quality: spec.quality })
      .toBuffer({ resolveWithObject: true });
    return { data, contentType: IMAGE_CONTENT_TYPES[spec.format], width: info.width, height: info.height };
  } catch (err) {
    throw new UnrenderableImage(`the image could not be converted: ${(err as Error).message}`);
  }
}
