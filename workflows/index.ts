// Entry point of the workflow bundle.
export { uploadWorkflow } from './upload';
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
