// Where a new upload's objects go, decided once, when its storage key is made (the key's
// claim): the target it names (an id or a name), else the tenant's default, else the
// instance's store; an upload token may pin one; a tenant that requires a residency gets no
// object anywhere else. The answer is the address prefix every object of the upload is under.
import type { Pool } from '../db/pool';
import { findStorageTarget, findTenantTarget, tenantPlacement, type StorageTargetRow } from '../db/queries/storage-targets';
import { dependency, problem } from '../errors';
import { addressOn } from '../storage/address';
import { keyStoragePrefix } from '../temporal/ids';

export interface PlacedUpload {
  tenantId: string;
  idempotencyKey: string;
  /** The target the upload names (id or name); absent: the tenant's default. */
  storageTarget?: string;
  /** The target its upload token pins (an id). */
  pinnedTarget?: string;
}

export class Placement {
  constructor(private readonly deps: { pool: Pool; defaultResidency?: string }) {}

  /** The address prefix of the upload's objects (422 for an unknown target or another residency, 403 past a token's pin). */
  async prefixFor(u: PlacedUpload): Promise<string> {
    const targetId = await this.targetFor(u);
    return addressOn(targetId, keyStoragePrefix(u.tenantId, u.idempotencyKey));
  }

  /** 422 unless the tenant's default (a target, or the instance's store) has this residency: a requirement its uploads can meet. */
  async assertDefaultIn(tenantId: string, residency: string): Promise<void> {
    const { pool } = this.deps;
    const tenant = await dependency('database_unavailable', () => tenantPlacement(pool, tenantId));
    const target = tenant?.default_storage_target
      ? await dependency('database_unavailable', () => findStorageTarget(pool, tenant.default_storage_target!))
      : undefined;
    this.assertResidency(residency, target);
  }

  /** The target's id, or null for the instance's store (the key plays no part: a token's pin is resolved with it too). */
  async targetFor(u: Omit<PlacedUpload, 'idempotencyKey'>): Promise<string | null> {
    const { pool } = this.deps;
    const tenant = await dependency('database_unavailable', () => tenantPlacement(pool, u.tenantId));
    let target: StorageTargetRow | undefined;
    if (u.storageTarget !== undefined) {
      target = await dependency('database_unavailable', () => findTenantTarget(pool, u.tenantId, u.storageTarget!));
      if (!target) throw problem('storage_target_unknown', `This tenant has no storage target "${u.storageTarget}".`);
    } else if (u.pinnedTarget ?? tenant?.default_storage_target) {
      target = await dependency('database_unavailable', () => findStorageTarget(pool, (u.pinnedTarget ?? tenant!.default_storage_target)!));
      if (!target || target.deleted_at) throw problem('storage_target_unknown', 'The storage target chosen for this upload is removed.');
    }
    if (u.pinnedTarget && target?.id !== u.pinnedTarget)
      throw problem('storage_target_not_allowed', 'This upload token stores its uploads in another storage target only.', {
        extra: { storageTarget: u.pinnedTarget },
      });
    this.assertResidency(tenant?.residency ?? null, target);
    return target?.id ?? null;
  }

  /**
   * A store a migration names: `default` (the instance's store, null) or one of the tenant's
   * targets (422 when unknown); a destination must have the tenant's residency.
   */
  async targetOrDefault(tenantId: string, ref: string, destination: boolean): Promise<string | null> {
    const { pool } = this.deps;
    const target = ref === 'default' ? undefined : await dependency('database_unavailable', () => findTenantTarget(pool, tenantId, ref));
    if (ref !== 'default' && !target) throw problem('storage_target_unknown', `This tenant has no storage target "${ref}".`);
    if (destination)
      this.assertResidency((await dependency('database_unavailable', () => tenantPlacement(pool, tenantId)))?.residency ?? null, target);
    return target?.id ?? null;
  }

  /** 422 when the store (a target, or the instance's store) is not in the residency the tenant requires. */
  private assertResidency(required: string | null, target: StorageTargetRow | undefined): void {
    const residency = target ? target.residency : (this.deps.defaultResidency ?? null);
    if (required && residency !== required)
      throw problem(
        'residency_mismatch',
        `This tenant keeps its uploads in residency "${required}"; ${target ? `storage target "${target.name}"` : 'the instance store'} is ${residency ? `"${residency}"` : 'unlabelled'}.`,
        { extra: { residency: required } },
      );
  }
}
