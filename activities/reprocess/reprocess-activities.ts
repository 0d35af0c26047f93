// Side effects of re-processing: paging through a job's uploads, recording each one's
// outcome once, and switching an upload to the renditions of the new version unless it
// serves a newer one (the older ones are removed only after the switch, object first, then
// row, so a retry finds what is left; a newer version's are never touched).
import type { Pool } from '../../src/db/pool';
import { deleteRenditionRow, unservedRenditions } from '../../src/db/queries/renditions';
import {
  finishReprocessJob,
  recordReprocessItems,
  reprocessPage,
  reprocessTarget,
  switchServedVersion,
  type ReprocessOutcome,
} from '../../src/reprocess/queries';
import { findPipelineVersion } from '../../src/db/queries/pipelines';
import type { ObjectStore } from '../../src/storage/store';
import { stepApplies, type ProcessingStep } from '../../src/pipelines/steps';

export interface ReprocessActivityDeps {
  pool: Pool;
  store: ObjectStore;
}

/** What re-running a version on one upload takes: its file, and the steps that make renditions of it. */
export type ReprocessPlan =
  | { skip: string }
  /** The upload serves this newer version already: nothing to run. */
  | { superseded: number }
  | {
      upload: { storageKey: string; contentType: string; bytes: number; sha256: string; fileName: string | null; createdAt: string };
      steps: [number, ProcessingStep][];
    };

export function createReprocessActivities({ pool, store }: ReprocessActivityDeps) {
  /** Removes renditions the upload does not serve: older versions', or one version's. */
  async function removeUnserved(uploadId: string, of: 'older' | { pipeline: string; version: number }): Promise<number> {
    let removed = 0;
    for (const r of await unservedRenditions(pool, uploadId, of)) {
      await store.delete(r.storage_key);
      await deleteRenditionRow(pool, { upload_id: uploadId, ...r });
      removed++;
    }
    return removed;
  }

  return {
    async listReprocessPage(a: { jobId: string; after: string | null; limit: number }): Promise<string[]> {
      return reprocessPage(pool, a.jobId, a.after, a.limit);
    },

    async recordReprocessItems(a: { jobId: string; items: ReprocessOutcome[] }): Promise<void> {
      await recordReprocessItems(pool, a.jobId, a.items);
    },

    async finishReprocessJob(a: { jobId: string; state: 'completed' | 'cancelled' }): Promise<void> {
      await finishReprocessJob(pool, a.jobId, a.state);
    },

    /** The upload's file and the version's rendition steps that apply to it, or why it is skipped. */
    async planReprocess(a: { tenantId: string; uploadId: string; pipeline: string; version: number }): Promise<ReprocessPlan> {
      const u = await reprocessTarget(pool, a.uploadId);
      if (!u) return { skip: 'upload deleted or rejected' };
      if (u.pipeline === a.pipeline && u.pipeline_version === a.version) return { skip: `already at version ${a.version}` };
      if (u.pipeline === a.pipeline && (u.pipeline_version ?? 0) > a.version) return { superseded: u.pipeline_version! };
      const version = await findPipelineVersion(pool, a.tenantId, a.pipeline, a.version);
      if (!version) return { skip: `pipeline ${a.pipeline} has no version ${a.version}` };
      // Re-processing remakes renditions; scans, calls and announcements ran when the upload came.
      const steps = [...version.steps.entries()].filter(
        (e): e is [number, ProcessingStep] =>
          ['image.variants', 'video.poster', 'video.hls', 'audio.transcode', 'document.preview'].includes(e[1].type) &&
          stepApplies(e[1], u.content_type),
      );
      if (!steps.length) return { skip: `no rendition step of version ${a.version} applies to ${u.content_type}` };
      return {
        upload: {
          storageKey: u.storage_key,
          contentType: u.content_type,
          bytes: Number(u.bytes),
          sha256: u.sha256,
          fileName: u.file_name,
          createdAt: u.created_at.toISOString(),
        },
        steps,
      };
    },

    /**
     * Serves the new version's renditions from this statement on, then removes the older
     * versions'. Not switched: the upload was deleted meanwhile (its erasure removes them
     * all), or it serves a newer version (`servedVersion`; the caller discards this one's).
     */
    async switchRenditions(a: {
      uploadId: string;
      pipeline: string;
      version: number;
      outcome: { status: 'ready' | 'skipped' | 'failed'; reason: string | null; media: Record<string, unknown> | null };
    }): Promise<{ switched: boolean; removed: number; servedVersion?: number }> {
      const r = await switchServedVersion(pool, a.uploadId, { pipeline: a.pipeline, version: a.version }, a.outcome);
      if (r.switched) return { switched: true, removed: await removeUnserved(a.uploadId, 'older') };
      return { switched: false, removed: 0, ...('servedVersion' in r ? { servedVersion: r.servedVersion } : {}) };
    },

    /** Removes what a re-run that did not finish made (never the served version's). */
    async discardVersion(a: { uploadId: string; pipeline: string; version: number }): Promise<number> {
      return removeUnserved(a.uploadId, { pipeline: a.pipeline, version: a.version });
    },
  };
}
