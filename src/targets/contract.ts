// The storage targets wing's Temporal contract, beneath every caller (its service, its runs, its
// activities): a migration's type, ID and input, each move's and the sources' release, what a
// migration records per upload, and its patches. Pure: workflows import it.
import type { WebhookRetrySchedule } from '../downstream/types';

/** The migration's run type (the name its function is exported under). */
export const migrationWorkflowTypes = {
  storageMigration: 'storageMigrationWorkflow',
} as const;

/** Its runs' IDs, derived from what they are about. */
export const migrationWorkflowIds = {
  storageMigration: (migrationId: string) => `storage-migration/${migrationId}`,
  /** One move of an upload at a time, whichever migration asks: a second one finds it running. */
  storageMove: (uploadId: string) => `move/${uploadId}`,
  /** The sources a migration's moves left, deleted once no URL signed before them can still read them. */
  releaseSources: (migrationId: string) => `release-sources/${migrationId}`,
} as const;

/** Its runs' patches (`patched(id)`). */
export const migrationPatches = {
  /** A storage migration moves its small uploads a page at a time in one activity. */
  migrationMovesSmallInBatches: 'migration-moves-small-in-batches',
  /** A storage migration records and announces its end as an event. */
  migrationAnnouncesItsEnd: 'migration-announces-its-end',
  /** A storage migration moves its small uploads in two lanes of half its concurrency, so one lane's tail overlaps the other's work. */
  migrationSmallInTwoLanes: 'migration-small-in-two-lanes',
  /** A page of small uploads whose activity failed for good records those a lost attempt switched as moved, not failed. */
  migrationFailureReadsAddresses: 'migration-failure-reads-addresses',
} as const;

/** A storage migration (ID `storage-migration/{id}`): every upload on `from` matching its filter moved to `to`. */
export interface StorageMigrationInput {
  migrationId: string;
  tenantId: string;
  /** The targets (null: the instance's store). */
  from: string | null;
  to: string | null;
  concurrency: number;
  /** How long a moved upload's source objects are kept (URLs signed before the move still read them). */
  sourceGraceSeconds: number;
  /** The schedule the event at its end is delivered on (runs started before it was carried send none). */
  webhookRetry?: WebhookRetrySchedule;
  /** Carried across continue-as-new. */
  after?: string | null;
  paused?: boolean;
  cancelled?: boolean;
}

/** What a migration records for each upload it took. */
export interface MigrationOutcome {
  uploadId: string;
  outcome: 'moved' | 'skipped' | 'failed';
  reason: string | null;
  bytes: number;
  /** A moved upload's original address before the move. */
  source?: string;
  /** Whether it had renditions or variants (their prefix at the source is listed only then). */
  derived?: boolean;
}

/** One upload's move (ID `move/{uploadId}`). */
export interface StorageMoveInput {
  tenantId: string;
  uploadId: string;
  from: string | null;
  to: string | null;
}

/** Small uploads moved in one activity, each outcome recorded by it as it comes. */
export interface StorageMoveBatchInput extends Omit<StorageMoveInput, 'uploadId'> {
  migrationId: string;
  uploadIds: string[];
  concurrency: number;
}

/** What one move answers its migration (a failed move is its run's failure). */
export type StorageMoveResult = Omit<MigrationOutcome, 'uploadId' | 'outcome'> & { outcome: 'moved' | 'skipped' };

/** Deleting what a migration's moves left at its source (ID `release-sources/{migrationId}`). */
export interface ReleaseSourcesInput {
  migrationId: string;
  delaySeconds: number;
  /** Carried across continue-as-new. */
  after?: string | null;
}
