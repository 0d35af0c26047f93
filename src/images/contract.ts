// The image wing's Temporal contract, beneath every caller (its routes, its activities, its run):
// the render run's type, ID and input, and the failures that cross from its activities to the
// API. Pure: workflows import it.
import type { CanonicalSpec } from './spec';

/** The render run's type (the name its function is exported under). */
export const imageWorkflowTypes = {
  imageVariant: 'imageVariantWorkflow',
} as const;

/** Its ID, derived from what it renders. */
export const imageWorkflowIds = {
  /** One render per (upload, canonical spec), ever: every replica's first request names the same run. */
  imageVariant: (uploadId: string, spec: string) => `image/${uploadId}/${spec}`,
} as const;

/** Failure types its activities end with, which the API answers. */
export const imageFailureTypes = {
  /** The source cannot give the asked variant (its bytes or its size): answered 422. */
  imageUnrenderable: 'image_unrenderable',
  /** The upload reached IMAGE_MAX_VARIANTS_PER_UPLOAD while the variant rendered: answered 409. */
  imageVariantsFull: 'too_many_image_variants',
} as const;

/** One image variant's render (ID `image/{uploadId}/{spec}`). */
export interface ImageVariantInput {
  tenantId: string;
  uploadId: string;
  spec: CanonicalSpec;
  transcodeQueue: string;
  /** IMAGE_MAX_VARIANTS_PER_UPLOAD, checked where the variant is recorded. */
  maxVariants?: number;
}
