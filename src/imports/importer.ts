// An import's life on the API side: the key rule first (a replay answers the stored answer,
// an import in flight answers its progress), then its admission, its row (the upload's id
// and progress, under the tenant's quota) and its run, which reads the file itself and
// commits through the same path as every other door.
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Pool } from '../db/pool';
import { findImport, findImportByKey, insertImportOrGet, removeImport, type ImportRow } from '../db/queries/imports';
import { findKeyAnswer } from '../db/queries/idempotency-keys';
import { QuotaReached } from '../db/queries/quotas';
import { dependency, problem } from '../errors';
import { assertImportUrlAllowed } from './url-check';
import { sealImportHeaders } from './headers';
import { sealS3Access } from './s3-source';
import { importView, type ImportView } from './view';
import type { SecretBox } from '../secret-box';
import { assertGrantLive, hostListed, type UploadGrant } from '../tokens/grant';
import { ImportFailure, Origins } from './origin';
import { uploadWorkflowId } from '../temporal/ids';
import type { Placement } from '../placement/placement';
import type { Intake } from '../arrivals/intake';
import { workflowTypes } from '../temporal/names';
import { reuseProblem } from '../upload/offer';
import type { UploadOutcome, UploadReceiver } from '../upload/receive';
import type { DeclaredUpload, UploadRequest } from '../upload/types';
import type { ImportSpec } from '../temporal/definitions';
import { importRequest, type ImportBody } from './request';
import { ImportProgress } from './door/protocol';
import type { UncommittedUploads } from '../upload/uncommitted';
import { cancelImportUpdate, type ImportCancelOutcome } from './contract';

export interface ImporterDeps {
  pool: Pool;
  temporal: Client;
  receiver: UploadReceiver;
  secrets: SecretBox;
  config: Config;
  /** The intake's admission of a new upload (token live and limits, pipeline, validation hook). */
  admit: (upload: DeclaredUpload) => Promise<void>;
  /** Which storage target a new import's object goes to. */
  placement: Pick<Placement, 'prefixFor'>;
}

/** The longest a look at a file (Uppy's url/meta) waits for the origin. */
const PROBE_MS = 15_000;

/** 403 unless an upload token lists the URL's host (an API key imports from any host). */
function assertHostAllowed(grant: UploadGrant | undefined, url: string): void {
  const host = URL.parse(url)?.hostname ?? '';
  if (grant && !hostListed(grant.importHosts ?? [], host))
    throw problem(
      'import_host_not_allowed',
      grant.importHosts
        ? `This upload token imports from ${grant.importHosts.join(', ')} only.`
        : 'This upload token may not import (it names no importHosts).',
    );
}

/** What the import door's service rides on: the upload services every door shares, and what they were wired from. */
export interface ImporterWiring {
  pool: Pool;
  temporal: Client;
  receiver: UploadReceiver;
  box: SecretBox;
  config: Config;
  intake: Pick<Intake, 'admit'>;
  placement: Pick<Placement, 'prefixFor'>;
}

/** The import door's service. Stateless: its door, its wing and a worker's batch items each build one from the same wiring. */
export function createImporter(w: ImporterWiring): Importer {
  return new Importer({
    pool: w.pool,
    temporal: w.temporal,
    receiver: w.receiver,
    secrets: w.box,
    config: w.config,
    admit: (upload) => w.intake.admit(upload),
    placement: w.placement,
  });
}

export type ImportOutcome = UploadOutcome | { kind: 'importing'; view: ImportView; workflowId: string };

export class Importer implements UncommittedUploads {
  /** An import not yet committed, as GET /v1/uploads/{id} shows it. */
  readonly schema = ImportProgress;

  constructor(private readonly deps: ImporterDeps) {}

  /**
   * POST /v1/imports, and each item of a batch. A new import (its key has neither an answer
   * nor an import) is admitted first: an upload token's hosts, then the intake's checks.
   */
  async create(upload: DeclaredUpload, body: ImportBody, waitMs: number): Promise<ImportOutcome> {
    const { pool } = this.deps;
    const req = importRequest(upload, body);
    const replay = await this.deps.receiver.replay(req, { beforeStart: true });
    if (replay) return replay;
    let row = await dependency('database_unavailable', () => findImportByKey(pool, req.tenantId, req.idempotencyKey));
    if (row && row.fingerprint !== req.fingerprint) throw reuseProblem();
    // Failed without an answer under the key (its run failed): the same request starts afresh.
    if (row?.state === 'failed') {
      await dependency('database_unavailable', () => removeImport(pool, row!.id));
      row = undefined;
    }
    let created = false;
    if (!row) {
      // The URL first: a validation hook is never asked about one that cannot be read.
      await this.assertUrlAllowed(body.url);
      await this.admit(upload, body.url);
      try {
        ({ row, created } = await this.insert(upload, req, body.url));
      } catch (err) {
        // Refused after its admission: its reservation under the byte quotas goes too.
        await this.deps.receiver.release(req);
        throw err;
      }
    }
    const workflowId = uploadWorkflowId(req.tenantId, req.idempotencyKey);
    await this.startRun(req, row, body, upload, created);
    if (waitMs > 0) {
      const outcome = await this.deps.receiver.awaitRun(req, workflowId, waitMs);
      if (outcome.kind === 'answer') return outcome;
    }
    const now = await dependency('database_unavailable', () => findImport(pool, req.tenantId, row.id));
    if (!now) {
      // Committed (its row went with the commit) just after the wait: the answer is the key's.
      const answer = await this.deps.receiver.replay(req);
      if (answer) return answer;
    }
    return { kind: 'importing', view: importView(now ?? row), workflowId };
  }

  /**
   * A deletion of an upload still being imported: its run stops the read (`canceling`: the key
   * then answers 410 import_canceled) unless the file is already read (`committing`: delete
   * the upload once it is committed). A run that no longer takes it (ended, or started by a
   * release without the update) answers `committing` too: its outcome is moments away.
   */
  async cancel(row: ImportRow): Promise<ImportCancelOutcome> {
    const handle = this.deps.temporal.workflow.getHandle(uploadWorkflowId(row.tenant_id, row.idempotency_key));
    try {
      return await handle.executeUpdate(cancelImportUpdate);
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) return 'committing';
      throw problem('temporal_unavailable', undefined, { cause: err });
    }
  }

  /** An import not yet committed, for GET /v1/uploads/{id}: its progress, or its failure with the answer it recorded. */
  async view(row: ImportRow): Promise<ImportView> {
    if (row.state !== 'failed') return importView(row);
    const answer = await dependency('database_unavailable', () => findKeyAnswer(this.deps.pool, row.tenant_id, row.idempotency_key));
    const recorded =
      answer && !answer.expired && answer.response_status !== null && answer.fingerprint === row.fingerprint
        ? { status: answer.response_status, body: answer.response_body }
        : undefined;
    return importView(row, recorded);
  }

  /** The import's answer once its run has one within `waitMs`, else "processing". */
  awaitAnswer(upload: DeclaredUpload, body: ImportBody, waitMs: number): Promise<UploadOutcome> {
    const req = importRequest(upload, body);
    return this.deps.receiver.awaitRun(req, uploadWorkflowId(req.tenantId, req.idempotencyKey), waitMs);
  }

  /**
   * What the origin says about the file at `url` (its media type and length), through the
   * import's checks and an upload token's hosts; the body is not read.
   */
  async probe(url: string, grant: UploadGrant | undefined): Promise<{ contentType: string | null; length: number | null }> {
    const { config } = this.deps;
    assertHostAllowed(grant, url);
    await this.assertUrlAllowed(url);
    const origins = new Origins(
      { allowPrivateNetworks: config.IMPORT_ALLOW_PRIVATE_NETWORKS },
      {
        maxBytes: Number.MAX_SAFE_INTEGER,
        maxRedirects: config.IMPORT_MAX_REDIRECTS,
        connectMs: config.IMPORT_CONNECT_SECONDS * 1000,
        idleMs: config.IMPORT_IDLE_SECONDS * 1000,
        totalMs: PROBE_MS,
      },
    );
    try {
      const got = await origins.open({ url, ...(grant ? { hosts: grant.importHosts ?? [] } : {}) });
      got.body.destroy();
      return { contentType: got.contentType, length: got.length };
    } catch (err) {
      if (err instanceof ImportFailure)
        throw problem(err.code, err.message, err.originStatus ? { extra: { originStatus: err.originStatus } } : undefined);
      throw err;
    } finally {
      void origins.close();
    }
  }

  private async admit(upload: DeclaredUpload, url: string): Promise<void> {
    assertGrantLive(upload.grant);
    assertHostAllowed(upload.grant, url);
    await this.deps.admit(upload);
  }

  private assertUrlAllowed(url: string): Promise<void> {
    return assertImportUrlAllowed(url, this.deps.config.IMPORT_ALLOW_PRIVATE_NETWORKS);
  }

  private async insert(upload: DeclaredUpload, req: UploadRequest, url: string): Promise<{ row: ImportRow; created: boolean }> {
    const { pool, config } = this.deps;
    const got = await dependency('database_unavailable', () =>
      insertImportOrGet(
        pool,
        {
          id: randomUUID(),
          tenant_id: req.tenantId,
          idempotency_key: req.idempotencyKey,
          fingerprint: req.fingerprint,
          origin: new URL(url).origin,
          token_id: upload.grant?.tokenId ?? null,
        },
        config.TENANT_MAX_IMPORTS_IN_FLIGHT,
      ).catch((err: unknown) => {
        if (err instanceof QuotaReached)
          throw problem(
            'too_many_imports',
            `This tenant already has ${err.limit} imports in flight; retry later with the same Idempotency-Key.`,
            { extra: { limit: err.limit } },
          );
        throw err;
      }),
    );
    if (!got.created && got.row.fingerprint !== req.fingerprint) throw reuseProblem();
    return got;
  }

  /**
   * Starts the key's run with the import, unless one runs: ours (a repeat, or a run already
   * committed) goes on; another request's (a session of another door holds the key) is 422.
   */
  private async startRun(req: UploadRequest, row: ImportRow, body: ImportBody, upload: DeclaredUpload, created: boolean) {
    const { config, temporal, pool } = this.deps;
    const workflowId = uploadWorkflowId(req.tenantId, req.idempotencyKey);
    const keyPrefix = await this.deps.placement.prefixFor({
      tenantId: req.tenantId,
      idempotencyKey: req.idempotencyKey,
      storageTarget: req.storageTarget,
      pinnedTarget: req.grant?.storageTarget,
    });
    const storageKey = `${keyPrefix}${row.id}`;
    const spec: ImportSpec = {
      uploadId: row.id,
      url: body.url,
      ...(body.headers ? { sealedHeaders: sealImportHeaders(this.deps.secrets, storageKey, body.headers) } : {}),
      ...(body.s3 ? { sealedS3Access: sealS3Access(this.deps.secrets, storageKey, body.s3) } : {}),
      storageKey,
      attemptId: row.id,
      maxBytes: Math.min(config.MAX_UPLOAD_BYTES, upload.grant?.maxBytes ?? Infinity),
      ...(upload.grant ? { hosts: upload.grant.importHosts ?? [] } : {}),
      typeDeclared: body.contentType !== undefined,
      heartbeatSeconds: config.IMPORT_HEARTBEAT_SECONDS,
      attemptSeconds: config.IMPORT_ATTEMPT_SECONDS,
      maxAttempts: config.IMPORT_MAX_ATTEMPTS,
    };
    try {
      await temporal.workflow.start(workflowTypes.upload, {
        ...this.deps.receiver.startOptions(req, workflowId, { import: spec }),
        workflowIdConflictPolicy: 'FAIL',
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw problem('temporal_unavailable', undefined, { cause: err });
      const running = await dependency('temporal_unavailable', () => temporal.workflow.getHandle(workflowId).describe());
      if (running.memo?.fingerprint === req.fingerprint) return;
      if (created) await dependency('database_unavailable', () => removeImport(pool, row.id));
      throw reuseProblem();
    }
  }
}
