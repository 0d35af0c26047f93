// The import wing's problem codes, gathered into the one catalogue (src/errors.ts) by the list
// of wings' vocabulary (src/wings-vocabulary.ts).
export const importProblems = {
  too_many_imports: { status: 429, title: 'Too many imports in flight for this tenant', retryAfter: 10 },
  too_many_progress_sockets: { status: 429, title: 'Too many import progress sockets open for this tenant', retryAfter: 10 },
  too_many_import_batches: { status: 429, title: 'Too many open import batches for this tenant', retryAfter: 60 },
  import_batch_closed: { status: 409, title: 'The import batch has ended' },
  import_in_progress: { status: 409, title: 'The upload is still being imported', retryAfter: 10 },
  import_canceled: { status: 410, title: 'The import was canceled: its upload was deleted before it was committed' },
  import_url_invalid: { status: 400, title: 'The import URL is not allowed' },
  import_source_invalid: { status: 422, title: "The import batch's S3 source cannot be imported" },
  import_host_not_allowed: { status: 403, title: 'The upload token does not allow imports from this host' },
  import_failed: { status: 422, title: 'The file could not be read from its origin' },
  import_too_large: { status: 413, title: 'The file at the origin is larger than the allowed maximum' },
  import_forbidden_address: { status: 422, title: 'The origin resolves to an address imports may not reach' },
  import_timeout: { status: 422, title: 'The origin did not send the file in time' },
} as const;
