// Entry point of the workflow bundle: every export is a workflow type.
import { runImport } from './imports/import-run';
import { uploadWorkflowWith } from './upload';

/** The upload run, with the runs of keys whose file Oncely reads itself (the import wing's). */
export const uploadWorkflow = uploadWorkflowWith({ import: runImport });
export { downstreamWorkflow } from './downstream';
export { housekeepingWorkflow } from './housekeeping';
export { deletionWorkflow, importErasureWorkflow } from './deletion';
export { redeliveryWorkflow, recoveryWorkflow } from './redelivery';
export { reprocessJobWorkflow, reprocessUploadWorkflow } from './reprocess/reprocess';
export { storageMigrationWorkflow, storageMoveWorkflow, releaseMovedSourcesWorkflow } from './targets/storage-migration';
export { importBatchWorkflow } from './imports/import-batch';
export { imageVariantWorkflow } from './images/image-variant';
export { tenantDeletionWorkflow } from './tenant-deletion';
export { announceEventWorkflow } from './announce';
