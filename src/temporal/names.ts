// Names shared by the API, the worker and workflow code. Pure: workflows import it.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const DEFAULT_TASK_QUEUES = { uploads: 'uploads', transcode: 'transcode' } as const;

export const searchAttributes = {
  tenant: defineSearchAttributeKey('OncelyTenant', SearchAttributeType.KEYWORD),
  idempotencyKey: defineSearchAttributeKey('OncelyIdempotencyKey', SearchAttributeType.KEYWORD),
  phase: defineSearchAttributeKey('OncelyPhase', SearchAttributeType.KEYWORD),
  contentType: defineSearchAttributeKey('OncelyContentType', SearchAttributeType.KEYWORD),
  bytes: defineSearchAttributeKey('OncelyBytes', SearchAttributeType.INT),
  /** An upload token's subject (the app's end user), when the upload was made with one. */
  subject: defineSearchAttributeKey('OncelySubject', SearchAttributeType.KEYWORD),
} as const;

/** `--search-attribute` flags for the dev server, derived from the keys above. */
export function searchAttributeFlags(): string[] {
  const cliType = { KEYWORD: 'Keyword', INT: 'Int' } as const;
  return Object.values(searchAttributes).flatMap((k) => ['--search-attribute', `${k.name}=${cliType[k.type as keyof typeof cliType]}`]);
}

export const updates = { offerCopy: 'offerCopy', offerCopyForAnswer: 'offerCopyForAnswer', completeStep: 'completeStep' } as const;

/** Failure types that cross the activity / workflow / API boundary. */
export const failureTypes = {
  /** The key is held by another route's request or another upload request: answered 422. */
  keyReuse: 'idempotency_key_reuse',
  /** The upload token's uploads are used up (counted at the commit): answered 403, nothing recorded. */
  tokenExhausted: 'token_exhausted',
  /** A step decision for a step that is not an undecided async http.call of the upload: answered 409. */
  stepNotWaiting: 'step_not_waiting',
} as const;
