// The step catalogue: what a pipeline declaration may contain, validated with zod (the
// same schemas describe it in /openapi.json). A declaration is plain JSON:
//   { "name": "photos", "steps": [{ "type": "image.variants", "variants": [...] }, { "type": "webhook" }] }
// The API validates with it; workflows import only its types (src/pipelines/steps.ts).
import { z } from '@hono/zod-openapi';

/** What a pipeline's or a rendition's name may be. */
export const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const PipelineName = z
  .string()
  .regex(NAME, 'lower-case letters, digits, "-" and "_", at most 63, starting with a letter or digit')
  .openapi({ example: 'photos' });
const RenditionName = z
  .string()
  .regex(NAME, 'lower-case letters, digits, "-" and "_", at most 63, starting with a letter or digit')
  .openapi({ example: 'w400' });

export const ImageVariant = z
  .object({
    name: RenditionName,
    width: z.number().int().min(1).max(16_384).optional(),
    height: z.number().int().min(1).max(16_384).optional(),
    fit: z
      .enum(['inside', 'outside', 'cover', 'contain', 'fill'])
      .default('inside')
      .openapi({ description: 'How the picture fits the box (sharp `fit`); never enlarged past the source.' }),
    format: z.enum(['webp', 'avif', 'jpeg', 'png']),
    quality: z
      .number()
      .int()
      .min(1)
      .max(100)
      .optional()
      .openapi({ description: "The encoder's quality (1-100); its default unless given." }),
  })
  .strict()
  .refine((v) => v.width !== undefined || v.height !== undefined, 'give a width, a height or both')
  .openapi('ImageVariant');

const ImageVariantsStep = z
  .object({
    type: z.literal('image.variants'),
    variants: z.array(ImageVariant).min(1).max(16),
    metadata: z
      .enum(['strip', 'keep-copyright', 'keep'])
      .default('strip')
      .openapi({ description: '`strip`: no metadata (GPS gone); `keep-copyright`: only the copyright and artist; `keep`: all of it.' }),
    autoOrient: z.boolean().default(true).openapi({ description: 'Apply the EXIF orientation, so the variant is upright.' }),
  })
  .strict()
  .openapi({ description: 'Resized, re-encoded pictures of an image.' });

const VideoPosterStep = z
  .object({
    type: z.literal('video.poster'),
    name: RenditionName.default('poster'),
    width: z.number().int().min(16).max(8192).default(1280).openapi({ description: 'At most this wide; never upscaled.' }),
  })
  .strict()
  .openapi({ description: 'A JPEG frame of a video (1 s in, or the first frame of a short one).' });

const VideoHlsStep = z
  .object({
    type: z.literal('video.hls'),
    name: RenditionName.default('hls'),
    ladder: z
      .array(
        z
          .object({
            height: z.number().int().min(144).max(2160),
            bitrate: z.string().regex(/^\d{2,5}k$/, 'kilobits per second, for example "2500k"'),
          })
          .strict(),
      )
      .min(1)
      .max(6)
      .default([
        { height: 360, bitrate: '800k' },
        { height: 720, bitrate: '2500k' },
      ])
      .openapi({ description: 'Rungs above the source height are left out (never upscaled); with none left, one at the source height.' }),
    segmentSeconds: z.number().int().min(1).max(30).default(6),
    poster: z.boolean().default(true),
  })
  .strict()
  .openapi({
    description:
      'An HLS ladder (H.264/AAC): one media playlist per rung (`{name}-{height}p`, its segments under it), then the master playlist `{name}`, written only once every rung is stored; a poster `{name}-poster`.',
  });

const AudioTranscodeStep = z
  .object({
    type: z.literal('audio.transcode'),
    name: RenditionName.default('audio'),
    format: z.enum(['aac', 'mp3', 'opus']).default('aac').openapi({ description: 'aac → audio/mp4, mp3 → audio/mpeg, opus → audio/ogg.' }),
    bitrate: z
      .string()
      .regex(/^\d{2,3}k$/, 'kilobits per second, for example "128k"')
      .default('128k'),
  })
  .strict()
  .openapi({ description: 'The sound of an audio (or video) file, re-encoded.' });

const DocumentPreviewStep = z
  .object({
    type: z.literal('document.preview'),
    name: RenditionName.default('preview'),
    width: z.number().int().min(16).max(8192).default(1024),
    format: z.enum(['webp', 'png', 'jpeg']).default('webp'),
  })
  .strict()
  .openapi({ description: 'The first page of a PDF as a picture (poppler).' });

const ScanStep = z
  .object({
    type: z.literal('scan.clamav'),
    gate: z
      .boolean()
      .default(true)
      .openapi({ description: 'Hold the upload (content 423, no upload.completed) until the scan has passed.' }),
    policy: z
      .enum(['block', 'flag'])
      .default('block')
      .openapi({ description: '`block`: an infected upload is rejected and its bytes deleted; `flag`: only recorded.' }),
    unscanned: z
      .enum(['allow', 'reject'])
      .default('allow')
      .openapi({ description: 'What a file the scanner could not scan (none configured, down, over its size limit) becomes.' }),
  })
  .strict()
  .openapi({ description: 'Stream the file to clamd (INSTREAM); the verdict is `clean`, `infected` or `not_scanned`, never assumed.' });

const TenantUrl = z
  .string()
  .url()
  .max(2000)
  .refine((u) => /^https?:\/\//i.test(u), 'http(s) only')
  .openapi({
    description: "The tenant's URL: called signed like webhooks (the pipeline's signing secret), from allowed addresses only.",
    example: 'https://app.example.com/oncely/check',
  });

const HttpCallStep = z
  .object({
    type: z.literal('http.call'),
    url: TenantUrl,
    gate: z.boolean().default(true).openapi({ description: 'Hold the upload until the call accepts it.' }),
    async: z.boolean().default(false).openapi({
      description:
        'The tenant may answer 202 and decide later with `POST /v1/uploads/{id}/steps/{step}/complete`; past `deadlineSeconds` the step fails.',
    }),
    deadlineSeconds: z.number().int().min(1).max(604_800).default(3600),
    timeoutSeconds: z
      .number()
      .int()
      .min(1)
      .max(60)
      .default(10)
      .openapi({ description: 'Per attempt; 5xx and timeouts are retried with backoff.' }),
  })
  .strict()
  .openapi({
    description:
      "POST the upload to the tenant's URL with a deterministic Idempotency-Key: 2xx continues, 4xx rejects the upload with the tenant's message.",
  });

/** Called before a body byte is read: 2xx accepts, 4xx refuses the upload (nothing stored), unreachable is 503. */
export const ValidationHookSpec = z
  .object({
    url: TenantUrl,
    timeoutSeconds: z.number().int().min(1).max(30).default(5),
  })
  .strict()
  .openapi('ValidationHook');
export type ValidationHookSpec = z.output<typeof ValidationHookSpec>;

const WebhookStep = z
  .object({ type: z.literal('webhook') })
  .strict()
  .openapi({ description: "Announce `upload.completed` and `upload.processed` to the tenant's webhook endpoints." });

export const PipelineStep = z
  .discriminatedUnion('type', [
    ImageVariantsStep,
    VideoPosterStep,
    VideoHlsStep,
    AudioTranscodeStep,
    DocumentPreviewStep,
    ScanStep,
    HttpCallStep,
    WebhookStep,
  ])
  .openapi('PipelineStep');
export type PipelineStep = z.output<typeof PipelineStep>;
export type StepType = PipelineStep['type'];
export type StepOf<T extends StepType> = Extract<PipelineStep, { type: T }>;

export const PipelineDeclaration = z
  .object({
    name: PipelineName,
    steps: z.array(PipelineStep).max(16),
    validate: ValidationHookSpec.optional().openapi({
      description: 'A hook asked before any byte of an upload naming this pipeline is read.',
    }),
  })
  .strict()
  .superRefine((p, ctx) => {
    const seen = new Set<string>();
    for (const [i, step] of p.steps.entries()) {
      for (const name of renditionNames(step)) {
        if (seen.has(name)) ctx.addIssue({ code: 'custom', path: ['steps', i], message: `rendition name "${name}" is used twice` });
        seen.add(name);
      }
      if ((step.type === 'webhook' || step.type === 'scan.clamav') && p.steps.findIndex((s) => s.type === step.type) !== i)
        ctx.addIssue({ code: 'custom', path: ['steps', i], message: `at most one ${step.type} step` });
    }
  })
  .openapi('PipelineDeclaration', {
    example: {
      name: 'photos',
      steps: [
        {
          type: 'image.variants',
          metadata: 'strip',
          autoOrient: true,
          variants: [
            { name: 'w400', width: 400, fit: 'inside', format: 'webp' },
            { name: 'w400-avif', width: 400, fit: 'inside', format: 'avif' },
          ],
        },
        { type: 'webhook' },
      ],
    },
  });
export type PipelineDeclaration = z.output<typeof PipelineDeclaration>;

/** The names of the renditions a step makes. */
export function renditionNames(step: PipelineStep): string[] {
  switch (step.type) {
    case 'image.variants':
      return step.variants.map((v) => v.name);
    case 'video.poster':
    case 'audio.transcode':
    case 'document.preview':
      return [step.name];
    case 'video.hls':
      return [step.name, ...step.ladder.map((r) => `${step.name}-${r.height}p`), ...(step.poster ? [`${step.name}-poster`] : [])];
    case 'scan.clamav':
    case 'http.call':
    case 'webhook':
      return [];
  }
}
