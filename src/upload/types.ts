// Data that crosses the API / workflow / activity boundary. Plain, serialisable types only:
// workflows import this file, so it must stay free of runtime code.

/** What the API knows about a request before reading its body; fixed by the first attempt. */
export interface UploadRequest {
  tenantId: string;
  idempotencyKey: string;
  fingerprint: string;
  contentType: string;
  fileName: string | null;
  declaredBytes: number;
  declaredSha256: string | null;
  /** When the upload is to be deleted (RFC 3339), as sent with it; absent: kept (or by the tenant's retention). */
  expiresAt?: string;
  /** The upload token it is made with: its limits, checked again on the bytes, and whose upload it is. */
  grant?: UploadGrant;
  /** The pipeline it names (X-Pipeline, tus metadata, plan or form field); absent: the tenant's `default`. */
  pipeline?: string;
}

/** What an upload token allows and names (src/tokens/upload-tokens.ts). */
export interface UploadGrant {
  tokenId: string;
  /** The app's end user the uploads are for. */
  subject: string | null;
  metadata: Record<string, string> | null;
  maxBytes: number | null;
  /** Media types (`image/png`) or families (`image/*`); null: any. */
  allowedTypes: string[] | null;
  maxUploads: number | null;
  expiresAt: string;
  /** The pipeline every upload made with it runs. */
  pipeline?: string;
}

/** One attempt's complete, verified copy of the body, sitting in the object store. */
export interface StagedCopy {
  attemptId: string;
  fingerprint: string;
  storageKey: string;
  bytes: number;
  sha256: string;
  /** Media type detected from the first bytes, when recognisable. */
  sniffedType: string | null;
}

export type OfferOutcome = 'accepted' | 'not_needed';

/** The answer recorded for a key: replayed byte for byte on every later request. */
export interface StoredResponse {
  status: number;
  body: string;
  uploadId: string | null;
  /** False when the records transaction already settled the downstream work (nothing to do). */
  downstreamNeeded?: boolean;
}

/** Named phases of an upload, shown in search attributes and the Temporal UI. */
/**
 * How an upload run ended when its status alone does not tell (the OncelyPhase search
 * attribute). Runs of revision 4 record only `rejected` and `abandoned`: a running run is
 * receiving and a completed one committed. `completed` is what revision-3 runs recorded.
 */
export type UploadPhase = 'completed' | 'rejected' | 'abandoned';
