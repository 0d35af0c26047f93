// Every activity the worker registers, built from injected dependencies.
import { createUploadActivities, type UploadActivityDeps } from './upload-activities';

export type ActivityDeps = UploadActivityDeps;

export function createActivities(deps: ActivityDeps) {
  return { ...createUploadActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
