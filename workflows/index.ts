// Entry point of the workflow bundle.
export { uploadWorkflow, offerCopyUpdate, offerCopyForAnswerUpdate } from './upload';
export { downstreamWorkflow } from './downstream';
export { housekeepingWorkflow } from './housekeeping';
