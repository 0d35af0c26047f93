// The import wing's Temporal contract, beneath every caller (its service, its runs, its
// activities): a batch's type, ID and input, the update that cancels an import, and its runs'
// patches. Pure: workflows import it.
import { defineUpdate } from '@temporalio/workflow';

/** The batch's run type (the name its function is exported under). */
export const importWorkflowTypes = {
  importBatch: 'importBatchWorkflow',
} as const;

/** Its runs' IDs, derived from what they are about (an import's own run is its upload's). */
export const importWorkflowIds = {
  importBatch: (batchId: string) => `import-batch/${batchId}`,
} as const;

/** Updates its runs take. */
export const importUpdates = {
  cancelImport: 'cancelImport',
} as const;

/** Its runs' patches (`patched(id)`). */
export const importPatches = {
  /** An import canceled while its file was read has its payload keys destroyed once its run ends. */
  eraseCanceledImport: 'erase-canceled-import',
  /** A canceled batch cancels the item imports under way. */
  batchCancelsItemsUnderWay: 'import-batch-cancels-items-under-way',
  /** A canceled batch records items that failed because of the cancel as skipped. */
  batchSkipsItemsFailedOnCancel: 'import-batch-skips-items-failed-on-cancel',
  /** ...and cancels their imports. */
  batchCancelsFailedItemsImport: 'import-batch-cancels-failed-items-import',
} as const;

/**
 * What `cancelImport` answers: `canceling` while an import's file is still being read (the
 * read stops, its parts go, and the key answers 410 `import_canceled`); `committing` once it
 * has been read (too late: the upload commits, and is then deleted like any other).
 * Registered on import runs only (a handler is no command: runs of any revision replay).
 */
export type ImportCancelOutcome = 'canceling' | 'committing';
export const cancelImportUpdate = defineUpdate<ImportCancelOutcome, []>(importUpdates.cancelImport);

/** An import batch's workflow input (ID `import-batch/{batchId}`). */
export interface ImportBatchInput {
  batchId: string;
  concurrency: number;
  /** Its S3 source is listed first (the batch's first run only). */
  listSource?: boolean;
  /** Where the previous run stopped, and the state it handed on (continue-as-new). */
  after?: number;
  paused?: boolean;
  cancelled?: boolean;
}
