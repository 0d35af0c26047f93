// The bookkeeping steps of jobs that run work over a list a few at a time (re-processing jobs,
// import batches, storage migrations; the running itself: src/temporal/in-windows.ts).
import type { LocalActivityOptions } from '@temporalio/common';

/** A job's own bookkeeping steps (list a page, record outcomes, finish): short, retried until they pass. */
export const JOB_STEP_OPTIONS: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
};
