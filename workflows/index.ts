// Entry point of the workflow bundle.
export { uploadWorkflow, offerCopyUpdate, acceptedAttemptQuery } from './upload';
export { downstreamWorkflow } from './downstream';
export { housekeepingWorkflow } from './housekeeping';
