// Entry point of the workflow bundle.
export { uploadWorkflow, offerCopyUpdate } from './upload';
