// Re-processing against the real stack, with the worker in its own process: a new version
// run over 1,000 uploads while the worker is SIGKILLed mid-run and restarted — every upload
// ends with exactly one rendition set, of the new version, the old objects gone, the audit
// clean — overlapping jobs of different versions (the newest version ends up served, whole,
// whichever job ends last, with and without a worker SIGKILL mid-step) — and a job's
// progress, filter, cancel and refusals.
import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit } from '../../src/audit';
import type { TestStack } from '../helpers/stack';
import { getJson, postUpload } from '../helpers/http';
import { eventually, listKeys, readObject } from '../helpers/inspect';
import { stackWithWorkerProcess } from '../helpers/worker-process';

let stack: TestStack;
let harness: Awaited<ReturnType<typeof stackWithWorkerProcess>>;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  harness = await stackWithWorkerProcess('reproc');
  stack = harness.stack;
  tenant = await stack.createTenant();
});
afterAll(() => harness?.stop());

const auth = () => ({ authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' });

async function post(pathname: string, body: unknown, key = `rp-${randomUUID()}`) {
  const res = await fetch(`${stack.url}${pathname}`, {
    method: 'POST',
    headers: { ...auth(), 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any, location: res.headers.get('location') };
}

/** A tiny PNG of its own colour, so every upload has bytes of its own. */
const tinyPng = (i: number) =>
  sharp({ create: { width: 24, height: 16, channels: 3, background: { r: i % 256, g: (i >> 8) % 256, b: 77 } } })
    .png()
    .toBuffer();

/** Uploads `n` pictures under the pipeline, `width` at a time; their ids. */
async function uploadMany(n: number, pipeline: string, width = 16): Promise<string[]> {
  const ids: string[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        const key = `many-${pipeline}-${i}-${randomUUID()}`;
        const body = await tinyPng(i);
        // As a client does: a 409 or 503 with Retry-After (a dependency slow under the suite's
        // load) is retried with the same key.
        let res = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'image/png', pipeline });
        for (let attempt = 0; (res.status === 409 || res.status === 503) && attempt < 5; attempt++) {
          await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
          res = await postUpload(stack.url, { apiKey: tenant.apiKey, key, body, contentType: 'image/png', pipeline });
        }
        expect(res.status, res.text).toBe(201);
        ids[i] = res.json.uploadId;
      }
    }),
  );
  return ids;
}

async function job(id: string) {
  return (await getJson(`${stack.url}/v1/reprocess-jobs/${id}`, tenant.apiKey)).json;
}

const processedCount = async (ids: string[]) =>
  (await stack.runtime.pool.query(`SELECT count(*)::int AS n FROM uploads WHERE id = ANY($1) AND status = 'processed'`, [ids])).rows[0]
    .n as number;

describe('re-processing 1,000 uploads', () => {
  it('ends with one rendition set of the new version per upload, across a worker SIGKILL, the old objects gone', async () => {
    expect(
      (
        await post('/v1/pipelines', {
          name: 'gallery',
          steps: [{ type: 'image.variants', variants: [{ name: 'old', width: 8, format: 'png' }] }],
        })
      ).status,
    ).toBe(201);
    const ids = await uploadMany(1000, 'gallery');
    await eventually(async () => ((await processedCount(ids)) === ids.length ? true : undefined), 300_000);
    const oldKeys = (await stack.runtime.pool.query(`SELECT storage_key FROM renditions WHERE upload_id = ANY($1)`, [ids])).rows.map(
      (r) => r.storage_key as string,
    );
    expect(oldKeys).toHaveLength(1000);

    const v2 = await post('/v1/pipelines', {
      name: 'gallery',
      steps: [
        {
          type: 'image.variants',
          variants: [
            { name: 'small', width: 12, format: 'webp' },
            { name: 'medium', width: 16, format: 'png' },
            { name: 'large', width: 20, format: 'jpeg' },
          ],
        },
      ],
    });
    expect(v2.json.version).toBe(2);
    const started = await post('/v1/pipelines/gallery/reprocess', { concurrency: 8 });
    expect(started.status).toBe(202);
    expect(started.json).toMatchObject({ pipeline: 'gallery', version: 2, state: 'running', total: 1000 });
    const jobId = started.json.id as string;
    expect(started.location).toBe(`/v1/reprocess-jobs/${jobId}`);

    // Kill the worker a good way in, then bring it back.
    await eventually(async () => ((await job(jobId)).done >= 150 ? true : undefined), 300_000);
    await harness.kill();
    await harness.start();
    const finished = await eventually(async () => {
      const j = await job(jobId);
      return j.state === 'completed' ? j : undefined;
    }, 600_000);
    expect(finished).toMatchObject({ total: 1000, done: 1000, skipped: 0, failed: 0, failures: [] });

    // Exactly one rendition set per upload, of version 2, served; nothing of version 1 left.
    const sets = await stack.runtime.pool.query(
      `SELECT u.id, u.pipeline_version, array_agg(r.name ORDER BY r.name) AS names, count(DISTINCT r.pipeline_version)::int AS versions
         FROM uploads u JOIN renditions r ON r.upload_id = u.id WHERE u.id = ANY($1) GROUP BY u.id, u.pipeline_version`,
      [ids],
    );
    expect(sets.rowCount).toBe(1000);
    for (const s of sets.rows)
      expect({ version: s.pipeline_version, names: s.names, versions: s.versions }).toEqual({
        version: 2,
        names: ['large', 'medium', 'small'],
        versions: 1,
      });
    for (const key of oldKeys.slice(0, 50)) expect(await listKeys(stack.s3, key)).toEqual([]);
    expect(await listKeys(stack.s3, `tenants/${tenant.tenantId}/renditions/${ids[0]}/gallery/v1/`)).toEqual([]);
    const detail = (await getJson(`${stack.url}/v1/uploads/${ids[0]}`, tenant.apiKey)).json;
    expect(detail.pipeline).toMatchObject({ name: 'gallery', version: 2 });
    const large = detail.renditions.find((r: any) => r.name === 'large');
    expect((await sharp(await readObject(stack.s3, large.storageKey)).metadata()).format).toBe('jpeg');
    expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);

    // The same version again re-runs nothing: every upload is already at it.
    const again = await post('/v1/pipelines/gallery/reprocess', {});
    const repeat = await eventually(async () => {
      const j = await job(again.json.id);
      return j.state === 'completed' ? j : undefined;
    }, 300_000);
    expect(repeat).toMatchObject({ total: 1000, done: 0, skipped: 1000 });
  }, 1_200_000);
});

describe('re-processing jobs', () => {
  it('takes only what the filter names, skips what no step applies to, and refuses bad requests', async () => {
    expect(
      (
        await post('/v1/pipelines', {
          name: 'mixed',
          steps: [{ type: 'image.variants', variants: [{ name: 'a', width: 8, format: 'png' }] }],
        })
      ).status,
    ).toBe(201);
    const [picture] = await uploadMany(1, 'mixed');
    const text = await postUpload(stack.url, {
      apiKey: tenant.apiKey,
      key: `txt-${randomUUID()}`,
      body: Buffer.from('words'),
      contentType: 'text/plain',
      pipeline: 'mixed',
    });
    expect(text.status).toBe(201);
    await eventually(async () => ((await processedCount([picture!, text.json.uploadId])) === 2 ? true : undefined), 60_000);
    await post('/v1/pipelines', { name: 'mixed', steps: [{ type: 'image.variants', variants: [{ name: 'b', width: 9, format: 'png' }] }] });

    const images = await post('/v1/pipelines/mixed/reprocess', { filter: { contentType: 'image/*' } });
    expect(images.json.total).toBe(1);
    const all = await post('/v1/pipelines/mixed/reprocess', { version: 2, filter: { createdAfter: '2020-01-01T00:00:00Z' } });
    expect(all.json.total).toBe(2);
    const done = await eventually(async () => {
      const j = await job(all.json.id);
      return j.state === 'completed' ? j : undefined;
    }, 120_000);
    // The picture was re-run by the first job or this one (once per version either way); the text file has no step.
    expect(done.done + done.skipped).toBe(2);
    expect(done.skipped).toBeGreaterThanOrEqual(1);
    const none = await post('/v1/pipelines/mixed/reprocess', { filter: { createdBefore: '2020-01-01T00:00:00Z' } });
    expect(none.json.total).toBe(0);
    await eventually(async () => ((await job(none.json.id)).state === 'completed' ? true : undefined), 60_000);

    expect((await post('/v1/pipelines/nosuch/reprocess', {})).status).toBe(404);
    expect((await post('/v1/pipelines/mixed/reprocess', { version: 9 })).status).toBe(404);
    for (const bad of [
      { version: 0 },
      { concurrency: 100 },
      { filter: { contentType: 'images' } },
      { filter: { createdAfter: 'yesterday' } },
      { extra: 1 },
    ]) {
      const res = await post('/v1/pipelines/mixed/reprocess', bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    expect((await getJson(`${stack.url}/v1/reprocess-jobs/${randomUUID()}`, tenant.apiKey)).status).toBe(404);
    const other = await stack.createTenant();
    expect((await getJson(`${stack.url}/v1/reprocess-jobs/${all.json.id}`, other.apiKey)).status).toBe(404);
  }, 300_000);

  it('a cancelled job stops, and every upload serves one complete set (the old or the new)', async () => {
    expect((await post('/v1/pipelines', { name: 'halted', steps: [] })).status).toBe(201);
    const ids = await uploadMany(60, 'halted');
    await post('/v1/pipelines', {
      name: 'halted',
      steps: [
        {
          type: 'image.variants',
          variants: [
            { name: 'x', width: 10, format: 'png' },
            { name: 'y', width: 12, format: 'png' },
          ],
        },
      ],
    });
    const started = await post('/v1/pipelines/halted/reprocess', { concurrency: 2 });
    await eventually(async () => ((await job(started.json.id)).done >= 4 ? true : undefined), 120_000);
    const cancelled = await fetch(`${stack.url}/v1/reprocess-jobs/${started.json.id}/cancel`, { method: 'POST', headers: auth() });
    expect(cancelled.status).toBe(202);
    const j = await eventually(async () => {
      const r = await job(started.json.id);
      return r.state === 'cancelled' ? r : undefined;
    }, 120_000);
    expect(j.done).toBeLessThan(60);
    // No upload is left half-switched: each has both new renditions or none, and nothing unserved stays.
    await eventually(async () => {
      const { violations } = await audit(stack.runtime.pool, stack.runtime.store);
      if (violations.length > 0) throw new Error(JSON.stringify(violations.slice(0, 5)));
      return true;
    }, 60_000);
    const counts = await stack.runtime.pool.query(
      `SELECT (SELECT count(*)::int FROM renditions r WHERE r.upload_id = u.id) AS n FROM uploads u WHERE u.id = ANY($1)`,
      [ids],
    );
    for (const c of counts.rows) expect([0, 2]).toContain(c.n);
  }, 300_000);
});

describe('overlapping jobs of different versions', () => {
  /** A noisy photograph: slow to encode as AVIF, so a step on it is still running when the other job ends. */
  const photo = (i: number) =>
    sharp({
      create: {
        width: 1600,
        height: 1200,
        channels: 3,
        background: { r: 0, g: 0, b: 0 },
        noise: { type: 'gaussian', mean: 100 + i, sigma: 40 },
      },
    })
      .jpeg({ quality: 85 })
      .toBuffer();
  const fast = (name: string) => ({ type: 'image.variants', variants: [{ name, width: 12, format: 'png' }] });
  const slow = (prefix: string) => [
    fast(`${prefix}early`),
    {
      type: 'image.variants',
      variants: [
        { name: `${prefix}late0`, width: 800, format: 'avif' },
        { name: `${prefix}late1`, width: 700, format: 'avif' },
      ],
    },
  ];

  async function served(ids: string[]) {
    const rows = await stack.runtime.pool.query(
      `SELECT u.id, u.pipeline_version AS version,
              coalesce((SELECT array_agg(r.name ORDER BY r.name) FROM renditions r
                         WHERE r.upload_id = u.id AND r.pipeline_version = u.pipeline_version), '{}') AS names,
              (SELECT count(*)::int FROM renditions r WHERE r.upload_id = u.id) AS all_rows
         FROM uploads u WHERE u.id = ANY($1) ORDER BY u.id`,
      [ids],
    );
    return rows.rows as { id: string; version: number; names: string[]; all_rows: number }[];
  }

  /** Rows of `version` named `name` for every upload: the job of that version is past its first step on each. */
  const pastFirstStep = async (ids: string[], version: number, name: string) =>
    (
      await stack.runtime.pool.query(
        `SELECT count(DISTINCT upload_id)::int AS n FROM renditions WHERE upload_id = ANY($1) AND pipeline_version = $2 AND name = $3`,
        [ids, version, name],
      )
    ).rows[0].n === ids.length;

  async function finished(id: string) {
    return eventually(async () => {
      const j = await job(id);
      return j.state === 'completed' ? j : undefined;
    }, 600_000);
  }

  it.each([
    ['', false],
    [' and the worker SIGKILLed mid-step', true],
  ])(
    'the newest version ends up served, complete, whichever job ends last%s',
    async (_, kill) => {
      const name = `race${kill ? 'k' : 'p'}`;
      const declare = async (steps: unknown[]) => (await post('/v1/pipelines', { name, steps })).json.version as number;
      expect(await declare([fast('orig')])).toBe(1);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await postUpload(stack.url, {
          apiKey: tenant.apiKey,
          key: `race-${randomUUID()}`,
          body: await photo(i),
          contentType: 'image/jpeg',
          pipeline: name,
        });
        expect(res.status, res.text).toBe(201);
        ids.push(res.json.uploadId);
      }
      await eventually(async () => ((await processedCount(ids)) === ids.length ? true : undefined), 120_000);
      expect(await declare(slow('v2'))).toBe(2);
      expect(await declare([fast('v3quick')])).toBe(3);
      expect(await declare([fast('v4quick')])).toBe(4);
      expect(await declare(slow('v5'))).toBe(5);

      // The older version is slow and ends last: it must not replace the newer one.
      const v2 = await post(`/v1/pipelines/${name}/reprocess`, { version: 2 });
      await eventually(async () => ((await pastFirstStep(ids, 2, 'v2early')) ? true : undefined), 120_000);
      const v3 = await post(`/v1/pipelines/${name}/reprocess`, { version: 3 });
      if (kill) {
        await harness.kill();
        await harness.start();
      }
      const [j2, j3] = [await finished(v2.json.id), await finished(v3.json.id)];
      for (const u of await served(ids)) expect(u, u.id).toMatchObject({ version: 3, names: ['v3quick'], all_rows: 1 });
      expect(j3).toMatchObject({ done: 3, failed: 0 });
      expect(j2.failed).toBe(0);
      expect(j2.done + j2.superseded).toBe(3);
      for (const u of j2.supersededUploads) expect(u.reason).toContain('version 3');
      expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);

      // The newer version is slow and ends last: the older one's switch must not remove what it has made so far.
      const v5 = await post(`/v1/pipelines/${name}/reprocess`, { version: 5 });
      await eventually(async () => ((await pastFirstStep(ids, 5, 'v5early')) ? true : undefined), 120_000);
      const v4 = await post(`/v1/pipelines/${name}/reprocess`, { version: 4 });
      const [j5, j4] = [await finished(v5.json.id), await finished(v4.json.id)];
      for (const u of await served(ids))
        expect(u, u.id).toMatchObject({ version: 5, names: ['v5early', 'v5late0', 'v5late1'], all_rows: 3 });
      expect(j5).toMatchObject({ done: 3, failed: 0, superseded: 0 });
      expect(j4.failed).toBe(0);
      expect(j4.done + j4.superseded).toBe(3);
      expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);

      // Asking for an older version than the one served changes nothing and says so.
      const back = await finished((await post(`/v1/pipelines/${name}/reprocess`, { version: 1 })).json.id);
      expect(back, JSON.stringify(back)).toMatchObject({ done: 0, superseded: 3 });
      expect((await served(ids)).every((u) => u.version === 5)).toBe(true);
    },
    900_000,
  );
});
