// Processing. pipelines, images and scans: What the steps after an upload may cost: transcodes, image variants, virus scans.
// docs/CONFIGURATION.md is generated from these comments (npm run docs:config).
import { z } from 'zod';

export const processingSettings = {
  /** The built-in default pipeline's thumbnail size (pixels). */
  THUMBNAIL_SIZE: z.coerce.number().int().min(16).max(4096).default(256),
  /** The built-in default pipeline's display size (pixels). */
  DISPLAY_SIZE: z.coerce.number().int().min(16).max(8192).default(1280),
  /** The built-in default pipeline's video poster width (pixels). */
  POSTER_WIDTH: z.coerce.number().int().min(16).max(8192).default(1280),
  /** The built-in default pipeline's audio bitrate (ffmpeg). */
  AUDIO_BITRATE: z
    .string()
    .regex(/^\d+k$/)
    .default('128k'),
  /** An ffmpeg/ffprobe/pdftoppm job running longer is killed; the step is `failed`. */
  TRANSCODE_TIMEOUT_SECONDS: z.coerce.number().positive().default(600),
  /** Pictures with more pixels fail their image step (decompression bombs). */
  IMAGE_MAX_PIXELS: z.coerce.number().int().min(1).default(268_402_689),
  /** Distinct image variants (`/images/{spec}`) one upload may have. */
  IMAGE_MAX_VARIANTS_PER_UPLOAD: z.coerce.number().int().min(1).max(10_000).default(50),
  /**
   * The most one variant may cost to render: its pixels × its format's cost per pixel (JPEG 1, PNG
   * 1.5, WebP 2, AVIF 6), in megapixels.
   */
  IMAGE_MAX_RENDER_COST: z.coerce.number().positive().default(48),
  /** Versions of one image preset name; one more is `409 quota_exceeded`. */
  IMAGE_PRESET_MAX_VERSIONS: z.coerce.number().int().min(1).max(100_000).default(100),
  /**
   * Clamd for `scan.clamav` steps: `tcp://host:port` or a unix socket path.
   * @default unset: every scan is `not_scanned`
   */
  CLAMD_ADDRESS: z
    .string()
    .regex(/^(tcp:\/\/[^:/\s]+:\d{1,5}|\/\S+)$/, 'CLAMD_ADDRESS is tcp://host:port or an absolute unix socket path')
    .optional(),
  /** The clamd `StreamMaxLength`: larger files are `not_scanned` without a try. */
  CLAMD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(25 * 1024 * 1024),
  /** A scan slower than this counts as clamd being down (tried 4 times). */
  CLAMD_TIMEOUT_SECONDS: z.coerce.number().positive().default(60),
};
