// An image transform's spec: the option string of `GET /v1/uploads/{id}/images/{spec}`
// (`w_400,h_300,fit_cover,f_webp,q_80`), parsed with its aliases and normalised into one
// canonical string before anything else, so equal requests name one variant: options in a
// fixed order, `dpr` folded into the dimensions, the fit and quality defaults written out,
// `f_auto` resolved against Accept. Pure: the API, the workflow IDs and the tests share it.

export type ImageFormat = 'webp' | 'avif' | 'jpeg' | 'png';
export type ImageFit = 'inside' | 'outside' | 'cover' | 'contain' | 'fill';

/** A spec as asked: the format may still be `auto` (from Accept) or absent (the source's). */
export interface ParsedSpec {
  width?: number;
  height?: number;
  fit: ImageFit;
  format?: ImageFormat | 'auto';
  quality?: number;
}

/** A spec resolved for one source and one Accept: what is rendered and stored. */
export interface CanonicalSpec {
  width?: number;
  height?: number;
  fit: ImageFit;
  format: ImageFormat;
  /** Absent for PNG (lossless). */
  quality?: number;
  /** The canonical option string: the variant's identity. */
  text: string;
  /** Whether Accept chose the format (the answer then varies on it). */
  negotiated: boolean;
}

export class SpecError extends Error {}

/** The largest width or height a spec may ask for (after dpr). */
export const MAX_DIMENSION = 8192;
/** Longest spec string accepted (a preset name or an option string). */
export const MAX_SPEC_LENGTH = 200;

const KEYS: Record<string, 'w' | 'h' | 'fit' | 'f' | 'q' | 'dpr'> = {
  w: 'w',
  width: 'w',
  h: 'h',
  height: 'h',
  fit: 'fit',
  c: 'fit',
  f: 'f',
  format: 'f',
  q: 'q',
  quality: 'q',
  dpr: 'dpr',
};
const FITS: Record<string, ImageFit> = {
  inside: 'inside',
  limit: 'inside',
  fit: 'inside',
  outside: 'outside',
  cover: 'cover',
  fill: 'cover',
  crop: 'cover',
  contain: 'contain',
  pad: 'contain',
  stretch: 'fill',
  scale: 'fill',
};
const FORMATS: Record<string, ImageFormat | 'auto'> = {
  webp: 'webp',
  avif: 'avif',
  jpeg: 'jpeg',
  jpg: 'jpeg',
  png: 'png',
  auto: 'auto',
};
/** Each encoder's default quality (sharp's), written into the canonical spec. */
const DEFAULT_QUALITY: Record<ImageFormat, number | undefined> = { webp: 80, avif: 50, jpeg: 80, png: undefined };
const DPRS = new Set([1, 1.5, 2, 3, 4]);

/** A table's own entry: a word like "constructor" names nothing (never Object.prototype's). */
function lookup<T>(table: Record<string, T>, word: string): T | undefined {
  return Object.hasOwn(table, word) ? table[word] : undefined;
}

/**
 * Whether a `{spec}` path segment is an option string (else it names a preset): it lists
 * several options, or its first word is an option this parser knows. A preset may not be
 * named like one (`thumb_small` is a name, `w_100` is not).
 */
export function isOptionString(spec: string): boolean {
  const first = /^([a-z]+)_/.exec(spec);
  return spec.includes(',') || (first !== null && lookup(KEYS, first[1]!) !== undefined);
}

/** Parses an option string; SpecError names the first option it cannot take. */
export function parseSpec(spec: string): ParsedSpec {
  if (spec.length > MAX_SPEC_LENGTH) throw new SpecError(`a spec is at most ${MAX_SPEC_LENGTH} characters`);
  const seen = new Map<string, string>();
  for (const part of spec.split(',')) {
    const m = /^([a-z]+)_([a-z0-9.]+)$/.exec(part);
    const key = m ? lookup(KEYS, m[1]!) : undefined;
    if (!m || !key) throw new SpecError(`"${part}" is not an option (w_, h_, fit_, f_, q_, dpr_)`);
    if (seen.has(key)) throw new SpecError(`"${part}" repeats an option already given`);
    seen.set(key, m[2]!);
  }
  const dprText = seen.get('dpr');
  const dpr = dprText === undefined ? 1 : Number(dprText);
  if (!DPRS.has(dpr)) throw new SpecError(`dpr_${dprText} is not one of ${[...DPRS].join(', ')}`);
  const dimension = (key: 'w' | 'h') => {
    const text = seen.get(key);
    if (text === undefined) return undefined;
    if (!/^[1-9][0-9]{0,4}$/.test(text)) throw new SpecError(`${key}_${text} is not a whole number of pixels`);
    const px = Math.round(Number(text) * dpr);
    if (px > MAX_DIMENSION) throw new SpecError(`${key}_${text}${dpr === 1 ? '' : ` at dpr ${dpr}`} is more than ${MAX_DIMENSION} pixels`);
    return px;
  };
  const width = dimension('w');
  const height = dimension('h');
  if (width === undefined && height === undefined) throw new SpecError('give w_, h_ or both');
  const fitText = seen.get('fit');
  const fit = fitText === undefined ? 'inside' : lookup(FITS, fitText);
  if (!fit) throw new SpecError(`fit_${fitText} is not one of ${Object.keys(FITS).join(', ')}`);
  const formatText = seen.get('f');
  const format = formatText === undefined ? undefined : lookup(FORMATS, formatText);
  if (formatText !== undefined && !format) throw new SpecError(`f_${formatText} is not one of webp, avif, jpeg, png, auto`);
  const qText = seen.get('q');
  let quality: number | undefined;
  if (qText !== undefined) {
    quality = Number(qText);
    if (!/^[0-9]{1,3}$/.test(qText) || quality < 1 || quality > 100) throw new SpecError(`q_${qText} is not a quality from 1 to 100`);
  }
  return {
    ...(width !== undefined ? { width } : {}),
    ...(height !== undefined ? { height } : {}),
    fit,
    ...(format ? { format } : {}),
    ...(quality !== undefined ? { quality } : {}),
  };
}

/** The format `f_auto` picks for an Accept header: AVIF, then WebP, then the source's own family. */
export function negotiateFormat(accept: string | undefined, sourceType: string): ImageFormat {
  const accepted = (type: string) =>
    (accept ?? '').split(',').some((entry) => {
      const [name, ...params] = entry.trim().split(';');
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      return name?.trim().toLowerCase() === type && (q === undefined || Number(q.slice(2)) > 0);
    });
  if (accepted('image/avif')) return 'avif';
  if (accepted('image/webp')) return 'webp';
  return sourceFamily(sourceType);
}

/** What a spec without a format renders as: the source's format when it is one we encode, else PNG or JPEG. */
function sourceFamily(sourceType: string): ImageFormat {
  switch (sourceType) {
    case 'image/jpeg':
      return 'jpeg';
    case 'image/webp':
      return 'webp';
    case 'image/avif':
      return 'avif';
    default:
      return sourceType === 'image/png' || sourceType === 'image/gif' ? 'png' : 'jpeg';
  }
}

/** The spec resolved for a source of `sourceType` and a request's Accept. */
export function canonicalSpec(parsed: ParsedSpec, sourceType: string, accept: string | undefined): CanonicalSpec {
  const negotiated = parsed.format === 'auto';
  const format = parsed.format === 'auto' ? negotiateFormat(accept, sourceType) : (parsed.format ?? sourceFamily(sourceType));
  const quality = format === 'png' ? undefined : (parsed.quality ?? DEFAULT_QUALITY[format]);
  const parts = [
    ...(parsed.width !== undefined ? [`w_${parsed.width}`] : []),
    ...(parsed.height !== undefined ? [`h_${parsed.height}`] : []),
    `fit_${parsed.fit}`,
    `f_${format}`,
    ...(quality !== undefined ? [`q_${quality}`] : []),
  ];
  return {
    ...(parsed.width !== undefined ? { width: parsed.width } : {}),
    ...(parsed.height !== undefined ? { height: parsed.height } : {}),
    fit: parsed.fit,
    format,
    ...(quality !== undefined ? { quality } : {}),
    text: parts.join(','),
    negotiated,
  };
}

/** A parsed spec written back as an option string (a preset's stored form): canonical order, `f_auto` and absent format kept. */
export function specText(parsed: ParsedSpec): string {
  return [
    ...(parsed.width !== undefined ? [`w_${parsed.width}`] : []),
    ...(parsed.height !== undefined ? [`h_${parsed.height}`] : []),
    `fit_${parsed.fit}`,
    ...(parsed.format ? [`f_${parsed.format}`] : []),
    ...(parsed.quality !== undefined ? [`q_${parsed.quality}`] : []),
  ].join(',');
}

export const IMAGE_CONTENT_TYPES: Record<ImageFormat, string> = {
  webp: 'image/webp',
  avif: 'image/avif',
  jpeg: 'image/jpeg',
  png: 'image/png',
};

/** What encoding a pixel costs, relative to JPEG (AVIF's encoder is by far the slowest). */
export const FORMAT_COST: Record<ImageFormat, number> = { jpeg: 1, png: 1.5, webp: 2, avif: 6 };

/** A render's cost: its output's pixels times its format's cost per pixel, in megapixels of JPEG. */
export function renderCost(width: number, height: number, format: ImageFormat): number {
  return (width * height * FORMAT_COST[format]) / 1_000_000;
}

/**
 * The most a spec can cost whatever its source (a box it fills whole: both dimensions given);
 * undefined when only the source decides (one dimension: its aspect sets the other).
 */
export function boxCost(spec: Pick<CanonicalSpec, 'width' | 'height' | 'format'>): number | undefined {
  return spec.width !== undefined && spec.height !== undefined ? renderCost(spec.width, spec.height, spec.format) : undefined;
}

/**
 * The size a spec renders a source of `source` pixels (upright) at: never larger than the
 * source in either dimension, whatever the fit. A box it fills whole (cover, contain, fill)
 * is scaled down, its shape kept, until it fits within the source.
 */
export function outputSize(
  spec: Pick<CanonicalSpec, 'width' | 'height' | 'fit'>,
  source: { width: number; height: number },
): {
  width: number;
  height: number;
  /** The box handed to the resizer (the spec's, scaled down to fit within the source). */
  box: { width?: number; height?: number };
} {
  const { width: w, height: h, fit } = spec;
  const sw = source.width;
  const sh = source.height;
  if (w !== undefined && h !== undefined && fit !== 'inside' && fit !== 'outside') {
    const scale = Math.min(1, sw / w, sh / h);
    const box = { width: Math.max(1, Math.round(w * scale)), height: Math.max(1, Math.round(h * scale)) };
    return { ...box, box };
  }
  // The source's shape kept: scaled to the box (inside: within it; outside: covering it), never up.
  const ratios = [w !== undefined ? w / sw : undefined, h !== undefined ? h / sh : undefined].filter((r) => r !== undefined);
  const scale = Math.min(1, fit === 'outside' ? Math.max(...ratios) : Math.min(...ratios));
  return {
    width: Math.max(1, Math.round(sw * scale)),
    height: Math.max(1, Math.round(sh * scale)),
    box: { ...(w !== undefined ? { width: w } : {}), ...(h !== undefined ? { height: h } : {}) },
  };
}
