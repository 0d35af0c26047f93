// The video.hls step with the worker in its own process: a ladder ffprobe can play, never
// upscaled, the master written only after every rung; the worker SIGKILLed mid-ladder and
// restarted goes on from the rung it was encoding, leaving the finished ones untouched; the
// tenant's stored bytes count every object of the ladder, its segments included; and a storage
// migration moves the ladder whole (every playlist and segment), the stream playing from the
// target afterwards.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { audit } from '../../src/audit';
import { testS3Store, type TestStack } from '../helpers/stack';
import { getJson, postUpload } from '../helpers/http';
import { eventually, listKeys, readObject } from '../helpers/inspect';
import { stackWithWorkerProcess } from '../helpers/worker-process';

const run = promisify(execFile);
let stack: TestStack;
let harness: Awaited<ReturnType<typeof stackWithWorkerProcess>>;
let tenant: { tenantId: string; apiKey: string };

beforeAll(async () => {
  harness = await stackWithWorkerProcess('hls', {
    STORAGE_TARGET_ALLOW_PRIVATE_NETWORKS: 'true',
    STORAGE_MIGRATION_SOURCE_GRACE_SECONDS: '0',
  });
  stack = harness.stack;
  tenant = await stack.createTenant();
});
afterAll(() => harness?.stop());

/** A 640×480 clip with sound, made by ffmpeg's own sources. */
async function clip(seconds: number): Promise<Buffer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'oncely-hls-'));
  try {
    const out = path.join(dir, 'clip.mp4');
    await run('ffmpeg', [
      ...['-hide_banner', '-loglevel', 'error', '-y'],
      ...['-f', 'lavfi', '-i', `testsrc=duration=${seconds}:size=640x480:rate=25`],
      ...['-f', 'lavfi', '-i', `sine=frequency=330:duration=${seconds}`],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', out],
    ]);
    const { readFile } = await import('node:fs/promises');
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const renditionRows = async (uploadId: string) =>
  (await stack.runtime.pool.query('SELECT name FROM renditions WHERE upload_id = $1 ORDER BY name', [uploadId])).rows.map(
    (r) => r.name as string,
  );

it('makes a playable ladder across a worker SIGKILL mid-encode, re-encoding no finished rung and writing the master last', async () => {
  const declared = await fetch(`${stack.url}/v1/pipelines`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'streams',
      steps: [
        {
          type: 'video.hls',
          segmentSeconds: 2,
          ladder: [
            { height: 240, bitrate: '400k' },
            { height: 360, bitrate: '800k' },
            { height: 720, bitrate: '2500k' },
          ],
        },
      ],
    }),
  });
  expect(declared.status).toBe(201);
  const created = await postUpload(stack.url, {
    apiKey: tenant.apiKey,
    key: `hls-${randomUUID()}`,
    body: await clip(40),
    contentType: 'video/mp4',
    pipeline: 'streams',
  });
  expect(created.status, created.text).toBe(201);
  const uploadId = created.json.uploadId as string;
  const prefix = `tenants/${tenant.tenantId}/renditions/${uploadId}/streams/v1/`;

  // The first rung is stored while the second is being encoded: kill the worker there.
  await eventually(async () => ((await renditionRows(uploadId)).includes('hls-240p') ? true : undefined), 180_000);
  const rows = await renditionRows(uploadId);
  expect(rows).toEqual(['hls-240p']);
  expect(await stack.s3.head(`${prefix}hls.m3u8`)).toBeUndefined();
  const first = await stack.s3.head(`${prefix}hls-240p.m3u8`);
  expect(first).toBeDefined();
  await harness.kill();
  await new Promise((r) => setTimeout(r, 1500)); // a rewrite would show a later LastModified
  await harness.start();

  const detail = await eventually(async () => {
    const r = await getJson(`${stack.url}/v1/uploads/${uploadId}?wait=20`, tenant.apiKey);
    return r.json.status === 'processed' ? r.json : undefined;
  }, 300_000);
  expect(detail.processing.status).toBe('ready');
  // Never upscaled: the 480-line source gets no 720p rung.
  expect(detail.renditions.map((r: any) => r.name).sort()).toEqual(['hls', 'hls-240p', 'hls-360p', 'hls-poster']);
  expect((await stack.s3.head(`${prefix}hls-240p.m3u8`))!.lastModified).toEqual(first!.lastModified);
  const segments = await listKeys(stack.s3, `${prefix}hls-240p/`);
  expect(segments.length).toBeGreaterThanOrEqual(15);

  // ffprobe plays the ladder from the stored objects.
  const dir = await mkdtemp(path.join(os.tmpdir(), 'oncely-hls-play-'));
  try {
    for (const key of await listKeys(stack.s3, prefix)) {
      const file = path.join(dir, key.slice(prefix.length));
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, await readObject(stack.s3, key));
    }
    const { stdout } = await run('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'stream=codec_type,height',
      '-of',
      'json',
      path.join(dir, 'hls.m3u8'),
    ]);
    const streams = (JSON.parse(stdout) as { streams: { codec_type: string; height?: number }[] }).streams;
    expect(new Set(streams.filter((s) => s.codec_type === 'video').map((s) => s.height))).toEqual(new Set([240, 360]));
    expect(streams.some((s) => s.codec_type === 'audio')).toBe(true);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  // And through the API: the master, a rung by the master's relative URL, a segment by the rung's.
  const base = `${stack.url}/v1/uploads/${uploadId}/renditions/`;
  const auth = { authorization: `Bearer ${tenant.apiKey}` };
  const masterText = await (await fetch(`${base}hls`, { headers: auth })).text();
  const rungUrl = masterText.split('\n').find((l) => l.endsWith('.m3u8'))!;
  const rung = await fetch(new URL(rungUrl, `${base}hls`), { headers: auth });
  expect(rung.headers.get('content-type')).toContain('mpegurl');
  const segmentUrl = (await rung.text()).split('\n').find((l) => l.endsWith('.ts'))!;
  const segment = await fetch(new URL(segmentUrl, new URL(rungUrl, `${base}hls`)), { headers: auth });
  expect(segment.status).toBe(200);
  expect(segment.headers.get('content-type')).toBe('video/mp2t');
  expect(Buffer.from(await segment.arrayBuffer())).toEqual(await readObject(stack.s3, `${prefix}${segmentUrl}`));
  expect((await fetch(`${base}hls-240p/999.ts`, { headers: auth })).status).toBe(404);
  expect((await fetch(`${base}hls-poster/000.ts`, { headers: auth })).status).toBe(404);
  const { stdout: overHttp } = await run('ffprobe', [
    ...['-v', 'error', '-headers', `Authorization: Bearer ${tenant.apiKey}\r\n`],
    ...['-show_entries', 'stream=codec_type,height', '-of', 'json', `${base}hls`],
  ]);
  const httpStreams = (JSON.parse(overHttp) as { streams: { codec_type: string; height?: number }[] }).streams;
  expect(new Set(httpStreams.filter((s) => s.codec_type === 'video').map((s) => s.height))).toEqual(new Set([240, 360]));
  // The tenant's stored bytes are the original and every rendition object, the segments included.
  let renditionBytes = 0;
  for await (const o of stack.s3.list(prefix)) renditionBytes += o.bytes;
  const usage = await stack.runtime.pool.query<{ stored: number; rows: number }>(
    `SELECT (SELECT stored_bytes FROM tenant_usage WHERE tenant_id = $1)::float8 AS stored,
            (SELECT sum(bytes + companion_bytes) FROM renditions WHERE upload_id = $2)::float8 AS rows`,
    [tenant.tenantId, uploadId],
  );
  expect(usage.rows[0]).toEqual({ stored: Number(detail.bytes) + renditionBytes, rows: renditionBytes });
  // The audit holds each rung's counted companions to its segments in the store.
  const firstRung = "upload_id = $1 AND name = 'hls-240p'";
  await stack.runtime.pool.query(`UPDATE renditions SET companion_bytes = companion_bytes + 1 WHERE ${firstRung}`, [uploadId]);
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations.join('\n')).toContain(`rendition ${uploadId}/hls-240p has`);
  await stack.runtime.pool.query(`UPDATE renditions SET companion_bytes = companion_bytes - 1 WHERE ${firstRung}`, [uploadId]);
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);

  // Moved to a target: every object of the ladder goes, the stream plays from there, the source is released.
  const { s3 } = inject('stack');
  const bucket = `hls-target-${randomUUID().slice(0, 8)}`;
  const targetBucket = await testS3Store(bucket);
  const json = { ...auth, 'content-type': 'application/json' };
  const target = await fetch(`${stack.url}/v1/storage-targets`, {
    method: 'POST',
    headers: { ...json, 'idempotency-key': randomUUID() },
    body: JSON.stringify({
      name: 'streams-archive',
      endpoint: s3.endpoint,
      bucket,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
    }),
  });
  expect(target.status, await target.clone().text()).toBe(201);
  const targetId = ((await target.json()) as { id: string }).id;
  const sourceObjects = await listKeys(stack.s3, prefix);
  const started = await fetch(`${stack.url}/v1/storage-migrations`, {
    method: 'POST',
    headers: { ...json, 'idempotency-key': randomUUID() },
    body: JSON.stringify({ from: 'default', to: 'streams-archive' }),
  });
  expect(started.status).toBe(201);
  const migrationId = ((await started.json()) as { id: string }).id;
  const moved = await eventually(async () => {
    const m = (await getJson(`${stack.url}/v1/storage-migrations/${migrationId}`, tenant.apiKey)).json;
    return m.state === 'completed' ? m : undefined;
  }, 120_000);
  expect(moved).toMatchObject({ moved: 1, failed: 0 });
  expect((await getJson(`${stack.url}/v1/uploads/${uploadId}`, tenant.apiKey)).json.storageTarget).toBe(targetId);
  const inTarget = await listKeys(targetBucket, prefix);
  targetBucket.destroy();
  expect(inTarget.sort()).toEqual(sourceObjects.sort());
  await eventually(async () => (await listKeys(stack.s3, prefix)).length === 0, 60_000);
  const { stdout: fromTarget } = await run('ffprobe', [
    ...['-v', 'error', '-headers', `Authorization: Bearer ${tenant.apiKey}\r\n`],
    ...['-show_entries', 'stream=codec_type,height', '-of', 'json', `${base}hls`],
  ]);
  const targetStreams = (JSON.parse(fromTarget) as { streams: { codec_type: string; height?: number }[] }).streams;
  expect(new Set(targetStreams.filter((s) => s.codec_type === 'video').map((s) => s.height))).toEqual(new Set([240, 360]));
  expect((await audit(stack.runtime.pool, stack.runtime.store)).violations).toEqual([]);
}, 600_000);
