// Shapes shared by the client on every platform.

/** One logical upload: its key is minted once, persisted, and reused on every attempt. */
export interface PendingUpload {
  id: string;
  idempotencyKey: string;
  sha256: string;
  bytes: number;
  contentType: string;
  fileName: string | null;
  /** Where the bytes are: a file path (Node) or a storage key (browser). */
  source: string;
  createdAt: string;
  attempts: number;
  /** A resumable (tus) upload's URL once created; kept so a later run resumes there. */
  uploadUrl?: string | null;
}

export interface UploadResult {
  /** The final HTTP status (201, or a final 4xx such as 422). */
  status: number;
  body: any;
  replayed: boolean;
  attempts: number;
}

export interface Outbox {
  list(): Promise<PendingUpload[]>;
  put(item: PendingUpload): Promise<void>;
  remove(id: string): Promise<void>;
}

/** What fetch accepts as a request body, on every platform. */
export type UploadBody = NonNullable<RequestInit['body']>;
