// Data that crosses the API / workflow / activity boundary. Plain, serialisable types only:
// workflows import this file, so it must stay free of runtime code.
import type { ArrivalMode } from '../modes';
import type { UploadGrant } from '../tokens/grant';

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
  /** The door it came through (recorded with the upload); absent in runs started before it was carried. */
  mode?: ArrivalMode;
  /** Its metadata and tags as sent (the token's metadata merged in); absent: none. */
  labels?: UploadLabels;
  /** The storage target it names (an id or a name; src/placement/placement.ts); absent: the tenant's default. */
  storageTarget?: string;
}

/** An upload's own record as it is sent with it: metadata and tags (src/http/parse/labels.ts). */
export interface UploadLabels {
  metadata?: Record<string, unknown>;
  /** Sorted, each once. */
  tags?: string[];
}

/** Who is uploading, as the pipeline's validation hook is told. */
export type Caller =
  { kind: 'key'; id: string; label: string } | { kind: 'token'; id: string; subject: string | null } | { kind: 'companion' };

/** What a door learnt about a new upload before any byte of it, under its caller (src/arrivals/intake.ts). */
export interface DeclaredUpload {
  tenantId: string;
  mode: ArrivalMode;
  key: string;
  /** Its length, when the door knows it before the bytes (a form post and Uppy do not). */
  bytes?: number;
  contentType: string;
  /** The door learns the type only from the file (an import that names none): `contentType` is a placeholder. */
  typeUnknown?: true;
  fileName: string | null;
  sha256: string | null;
  /** When the upload is to be deleted (RFC 3339), as sent with it. */
  expiresAt?: string;
  /** The pipeline it runs, the token's pin applied; absent: the tenant's `default`. */
  pipeline?: string;
  /** Its metadata and tags, the token's metadata merged in; absent: none. */
  labels?: UploadLabels;
  /** The storage target it names (an id or a name); absent: the token's pin or the tenant's default. */
  storageTarget?: string;
  /** The upload token it is made with. */
  grant?: UploadGrant;
  caller: Caller;
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
