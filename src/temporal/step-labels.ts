// The fixed labels Oncely gives its workflows' steps (an activity's summary in the Temporal
// UI). Each says what a step does and is the same text in every run, never whose data it
// handles: the payload codec leaves them in clear (a label is a payload like any other, one
// more cipher each time a step is scheduled), so an operator reads them without the codec
// server. A label built from a run's data (a downstream step's, a delivery's) is not one of
// these and is sealed like the rest.
export const stepLabels = {
  commitUpload: 'Verify the accepted copy, write the upload row and the key row in one transaction, start the downstream run',
  startDownstream: 'Start the downstream run of an upload a lost workflow task committed',
  failImport: 'Mark an import whose run failed without an answer',
  fetchImport: 'Read the file from its origin into the store',
  findCommittedAnswer: 'Look for an answer a lost workflow task committed',
  discardCopy: 'Delete the copy of a rejected upload',
  expireIdleSession: 'Expire the resumable session if it has been idle',
  commitObject: 'Verify the accepted copy in the object store',
  commitRecords: 'Write the upload row and the key row in one transaction',
  awaitUploadRunsClosed: 'Wait for the upload run; cancel and wait for its downstream child',
  eraseRunKeys: "Destroy the data keys of the canceled import's run",
  tombstoneUpload: 'Tombstone the upload: its bytes are no longer served',
  openRestoreWindow: 'Open the restore window: the upload can be restored until it ends',
  restoreUpload: 'Restore the upload as it was, and record upload.restored',
  closeRestoreWindow: 'Close the restore window (a legal hold keeps it until released)',
  announceRestored: 'Announce upload.restored to every webhook endpoint, in a run of its own',
  eraseRenditions: 'Delete every rendition',
  releaseOriginal: 'Release the original; delete its bytes unless another upload shares them',
  scrubUpload: 'Scrub the personal metadata; the key now answers 410',
  announceDeleted: 'Announce upload.deleted to every webhook endpoint, in a run of its own',
  renderImageVariant: 'Render the variant and record it',
  listImportBatchSource: "List the S3 source's objects as the batch's items (bounded by objects, pages and time)",
  importBatchItem: 'Import one item of the batch',
  cancelImportBatchItem: "Cancel the import of an item whose attempt failed as the batch's cancel reached it",
  redeliverEvent: 'Send the recorded event again (same webhook-id, same body)',
  sweepTenant: "End the tenant's open work and erase its uploads",
} as const;
