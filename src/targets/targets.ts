// A tenant's storage targets: registering one (proved first: src/targets/probe.ts), its
// credentials rotated (proved again), the tenant's default, and removal once nothing lives on
// it. The secret access key is sealed under the target's id and never answered back.
import { randomUUID } from 'node:crypto';
import type { Pool, Queryable } from '../db/pool';
import { withTransaction } from '../db/pool';
import { insertWithinQuota, lockTenant } from '../db/queries/quotas';
import {
  findTenantTarget,
  insertStorageTarget,
  pageTenantTargets,
  removeStorageTarget,
  setDefaultTarget,
  setTargetCredentials,
  targetUse,
  tenantPlacement,
  type StorageTargetRow,
} from '../db/queries/storage-targets';
import { assertDeliverableUrl, DisallowedUrlError } from '../downstream/url-guard';
import { dependency, problem } from '../errors';
import { withinQuota } from '../http/quota';
import { creationOrderPage } from '../http/list-query';
import { storageTargetSecretContext, type SecretBox } from '../secret-box';
import { targetStore, type TargetClientSettings } from '../placement/directory';
import { proveTarget } from './probe';
import type { z } from '@hono/zod-openapi';
import type { ChangeStorageTarget, CreateStorageTarget } from './schemas';

export interface StorageTargetsDeps {
  pool: Pool;
  box: SecretBox;
  settings: TargetClientSettings;
  allowPrivateNetworks: boolean;
  maxTargets: number;
}

export interface TargetView {
  row: StorageTargetRow;
  isDefault: boolean;
}

export class StorageTargets {
  constructor(private readonly deps: StorageTargetsDeps) {}

  async create(tenantId: string, body: z.output<typeof CreateStorageTarget>): Promise<TargetView> {
    const { pool, box } = this.deps;
    await this.assertReachable(body.endpoint);
    const id = randomUUID();
    const candidate: StorageTargetRow = {
      id,
      tenant_id: tenantId,
      name: body.name,
      endpoint: body.endpoint,
      bucket: body.bucket,
      region: body.region,
      prefix: body.prefix,
      force_path_style: body.forcePathStyle,
      access_key_id: body.accessKeyId,
      secret_access_key: box.seal(body.secretAccessKey, storageTargetSecretContext(id)),
      residency: body.residency ?? null,
      encryption: body.encryption ?? null,
      version: 1,
      created_at: new Date(),
      updated_at: new Date(),
      deleted_at: null,
    };
    if (await dependency('database_unavailable', () => findTenantTarget(pool, tenantId, body.name)))
      throw problem('storage_target_name_taken', `This tenant already has a storage target named "${body.name}".`);
    await this.prove(candidate);
    const row = await withinQuota(() =>
      insertWithinQuota(pool, tenantId, 'storage_targets', this.deps.maxTargets, async (tx) => {
        const inserted = await insertStorageTarget(tx, candidate).catch((err: unknown) => {
          if ((err as { code?: string }).code === '23505')
            throw problem('storage_target_name_taken', `This tenant already has a storage target named "${body.name}".`);
          throw err;
        });
        if (body.default) await this.makeDefault(tx, tenantId, inserted);
        return inserted;
      }),
    );
    return { row, isDefault: body.default };
  }

  /** A page of the tenant's targets (the list's query: `limit`, `cursor`), its default and required residency. */
  async list(tenantId: string, query: Record<string, string>) {
    const [page, placement] = await Promise.all([
      creationOrderPage(query, (at) => pageTenantTargets(this.deps.pool, tenantId, at)),
      dependency('database_unavailable', () => tenantPlacement(this.deps.pool, tenantId)),
    ]);
    const defaultTarget = placement?.default_storage_target ?? null;
    return {
      targets: page.items.map((row): TargetView => ({ row, isDefault: row.id === defaultTarget })),
      nextCursor: page.nextCursor,
      defaultTarget,
      residency: placement?.residency ?? null,
    };
  }

  async get(tenantId: string, id: string): Promise<TargetView> {
    const [row, placement] = await dependency('database_unavailable', () =>
      Promise.all([findTenantTarget(this.deps.pool, tenantId, id), tenantPlacement(this.deps.pool, tenantId)]),
    );
    if (!row || row.id !== id) throw problem('not_found', 'No such storage target.');
    return { row, isDefault: placement?.default_storage_target === id };
  }

  /** New credentials (proved before they are kept) and/or the tenant's default. */
  async change(tenantId: string, id: string, body: z.output<typeof ChangeStorageTarget>): Promise<TargetView> {
    const { pool, box } = this.deps;
    let { row } = await this.get(tenantId, id);
    let sealed: { access_key_id: string; secret_access_key: string } | undefined;
    if (body.accessKeyId !== undefined && body.secretAccessKey !== undefined) {
      sealed = { access_key_id: body.accessKeyId, secret_access_key: box.seal(body.secretAccessKey, storageTargetSecretContext(id)) };
      await this.prove({ ...row, ...sealed });
    }
    row = await dependency('database_unavailable', () =>
      withTransaction(pool, async (tx) => {
        await lockTenant(tx, tenantId);
        const current = sealed ? await setTargetCredentials(tx, tenantId, id, sealed) : await findTenantTarget(tx, tenantId, id);
        if (!current) throw problem('not_found', 'No such storage target.');
        if (body.default === true) await this.makeDefault(tx, tenantId, current);
        if (body.default === false) {
          const placement = await tenantPlacement(tx, tenantId);
          if (placement?.default_storage_target === id) await setDefaultTarget(tx, tenantId, null);
        }
        return current;
      }),
    );
    return this.get(tenantId, row.id);
  }

  /** Removes a target nothing lives on (409 with what does). */
  async remove(tenantId: string, id: string): Promise<void> {
    await dependency('database_unavailable', () =>
      withTransaction(this.deps.pool, async (tx) => {
        await lockTenant(tx, tenantId);
        if (!(await findTenantTarget(tx, tenantId, id))) throw problem('not_found', 'No such storage target.');
        const use = await targetUse(tx, tenantId, id);
        if (use.uploads > 0 || use.sessions > 0 || use.isDefault)
          throw problem(
            'storage_target_in_use',
            use.isDefault
              ? "It is the tenant's default target: make another the default (or PATCH default: false) first."
              : `${use.uploads} uploads and ${use.sessions} open sessions are stored in it: delete or move them first.`,
            { extra: { uploads: use.uploads, sessions: use.sessions, default: use.isDefault } },
          );
        await removeStorageTarget(tx, tenantId, id);
      }),
    );
  }

  /** Makes a target the default, unless the tenant requires another residency (422). */
  private async makeDefault(tx: Queryable, tenantId: string, target: StorageTargetRow): Promise<void> {
    const placement = await tenantPlacement(tx, tenantId);
    if (placement?.residency && target.residency !== placement.residency)
      throw problem(
        'residency_mismatch',
        `This tenant keeps its uploads in residency "${placement.residency}"; storage target "${target.name}" is ${target.residency ? `"${target.residency}"` : 'unlabelled'}.`,
        { extra: { residency: placement.residency } },
      );
    await setDefaultTarget(tx, tenantId, target.id);
  }

  private async assertReachable(endpoint: string): Promise<void> {
    try {
      await assertDeliverableUrl(endpoint, { allowPrivateNetworks: this.deps.allowPrivateNetworks });
    } catch (err) {
      if (err instanceof DisallowedUrlError) throw problem('storage_target_refused', `The endpoint is refused: ${err.message}.`);
      throw err;
    }
  }

  private async prove(row: StorageTargetRow): Promise<void> {
    const store = targetStore(row, this.deps.box, this.deps.settings);
    try {
      await proveTarget(store, row.prefix);
    } finally {
      store.destroy();
    }
  }
}
