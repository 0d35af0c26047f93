// Each direct upload's target follows the store its key lives in: a key a store signs for
// gets that store's URLs (one target per presigner), any other the API's own signed PUT.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DirectTargets, PresignedTarget, SelfSignedTarget } from '../../src/arrivals/direct/targets';
import { SecretBox } from '../../src/secret-box';
import type { ObjectPresigner, ObjectStore } from '../../src/storage/store';

const presigner = { presignPut: () => Promise.reject(new Error('unused')) } as unknown as ObjectPresigner;
const box = new SecretBox(randomBytes(32));
const opts = { singlePutMaxBytes: 5 * 1024 * 1024, partBytes: 5 * 1024 * 1024 };

describe('DirectTargets', () => {
  it('signs for a key in a store with URLs of its own, and takes the bytes itself for any other', async () => {
    const store = {
      presignerFor: (key: string) => Promise.resolve(key.startsWith('targets/') ? presigner : undefined),
    } as unknown as ObjectStore;
    const targets = new DirectTargets(store, box, opts);
    const signed = await targets.of('targets/t1/tenants/a/keys/k/1');
    expect(signed).toBeInstanceOf(PresignedTarget);
    expect(await targets.of('targets/t1/tenants/a/keys/k/2')).toBe(signed);
    expect(await targets.of('tenants/a/keys/k/3')).toBe(targets.selfSigned);
    expect(targets.selfSigned).toBeInstanceOf(SelfSignedTarget);
  });

  it('on a store that routes nothing, follows whether the store itself signs', async () => {
    const signing = new DirectTargets({ presigner } as unknown as ObjectStore, box, opts);
    expect(await signing.of('tenants/a/keys/k/1')).toBeInstanceOf(PresignedTarget);
    const local = new DirectTargets({} as ObjectStore, box, opts);
    expect(await local.of('tenants/a/keys/k/1')).toBe(local.selfSigned);
  });

  it('plans one PUT up to the single-PUT size and parts above it, begun in the store', async () => {
    const begun: string[] = [];
    const parts = { beginCheckedParts: (key: string) => (begun.push(key), Promise.resolve('mp-1')) } as unknown as ObjectPresigner;
    const target = new PresignedTarget(parts, opts);
    expect(await target.begin('k1', 'application/octet-stream', 5 * 1024 * 1024)).toEqual({ multipartId: '', partBytes: null });
    expect(await target.begin('k2', 'application/octet-stream', 5 * 1024 * 1024 + 1)).toEqual({
      multipartId: 'mp-1',
      partBytes: 5 * 1024 * 1024,
    });
    expect(begun).toEqual(['k2']);
  });
});
