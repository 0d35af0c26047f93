// The download routes' schemas: the disposition asked for, a download URL's request and answer.
import { z } from '@hono/zod-openapi';
import { lifetimeSeconds } from '../http/schemas';

export const DispositionQuery = z.enum(['inline', 'attachment'], { error: 'disposition must be inline or attachment.' }).openapi({
  description:
    '`attachment` (default) makes a browser save the file, `inline` lets it show it. Scripts and markup (HTML, SVG, XML, JavaScript) are always attachments.',
});

export const CreateDownloadUrl = z
  .object({
    expiresInSeconds: lifetimeSeconds('How long the URL works (default 900 s, at most DOWNLOAD_URL_MAX_SECONDS).'),
    disposition: DispositionQuery.optional(),
    rendition: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .openapi({ description: 'A rendition of the upload instead of the original.', example: 'thumbnail' }),
  })
  .strict()
  .openapi('CreateDownloadUrl');

export const DownloadUrl = z
  .object({
    url: z
      .string()
      .openapi({ description: 'Fetch it with GET (Range works); no API key. A presigned S3 URL cannot be revoked before it expires.' }),
    expiresAt: z.string(),
    disposition: z.enum(['inline', 'attachment']),
  })
  .openapi('DownloadUrl');
