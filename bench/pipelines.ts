// Pipelines (#24), against an API and a worker process on the production bundle (hls: a
// ladder through the pipeline vs the same ffmpeg commands run directly):
//  - reprocess: a 3-variant image version re-run over N small images by a job, against the
//    same sharp calls in a plain loop in this process (the orchestration's overhead ratio);
//  - gate: time from an upload's 201 to its scan gate opening (clamd, the tests' signatures),
//    p50/p99, against a direct INSTREAM of the same bytes from this process.
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import getPort from 'get-port';
import sharp from 'sharp';
import { createPool } from '../src/db/pool';
import { createTenant } from '../src/tenants';
import { ClamdScanner } from '../src/scan/clamd';
import { rungArgs } from '../src/media/hls';
import { startClamd } from '../test/support/clamd';
import { startOncelyProcess, type BenchServices } from './lib/services';

const VARIANTS = [
  { name: 'small', width: 120, format: 'webp' },
  { name: 'medium', width: 240, format: 'avif' },
  { name: 'large', width: 480, format: 'jpeg' },
] as const;

const picture = (i: number) =>
  sharp({ create: { width: 640, height: 480, channels: 3, background: { r: i % 256, g: (i * 7) % 256, b: 90 } } })
    .jpeg({ quality: 80 })
    .toBuffer();

const run = promisify(execFile);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function within<T>(ms: number, what: string, poll: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await poll();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function reprocessThroughput(services: BenchServices, opts: { uploads: number; concurrency: number }) {
  const api = await startOncelyProcess(services, 'api');
  const worker = await startOncelyProcess(services, 'worker');
  const pool = createPool(services.databaseUrl, 1);
  try {
    const tenant = await createTenant(pool, 'bench-reprocess');
    const call = async (pathname: string, body: unknown) => {
      const res = await fetch(`${api.url}${pathname}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': `bench-${randomUUID()}`,
        },
        body: JSON.stringify(body),
      });
      if (res.status >= 300) throw new Error(`${pathname} answered ${res.status}: ${await res.text()}`);
      return (await res.json()) as Record<string, any>;
    };
    // Version 1 makes nothing: the uploads commit without a downstream step.
    await call('/v1/pipelines', { name: 'bench', steps: [] });
    const images: Buffer[] = [];
    for (let i = 0; i < opts.uploads; i++) images.push(await picture(i));
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < images.length) {
          const i = next++;
          const res = await fetch(`${api.url}/v1/uploads`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${tenant.apiKey}`,
              'idempotency-key': `bench-reprocess-image-${i}-${randomUUID()}`,
              'content-type': 'image/jpeg',
              'x-pipeline': 'bench',
            },
            body: images[i],
          });
          if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
        }
      }),
    );
    await call('/v1/pipelines', { name: 'bench', steps: [{ type: 'image.variants', variants: VARIANTS }] });

    // Baseline: the same three conversions per image, one image after another, here.
    const t0 = performance.now();
    for (const image of images)
      for (const v of VARIANTS)
        await sharp(image, { failOn: 'error' })
          .rotate()
          .resize({ width: v.width, fit: 'inside', withoutEnlargement: true })
          .toFormat(v.format)
          .toBuffer();
    const loopSeconds = (performance.now() - t0) / 1000;

    const t1 = performance.now();
    const job = await call('/v1/pipelines/bench/reprocess', { concurrency: opts.concurrency });
    const done = await within(1_800_000, 'reprocess job', async () => {
      const res = await fetch(`${api.url}/v1/reprocess-jobs/${job.id}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
      const j = (await res.json()) as Record<string, any>;
      return j.state === 'completed' ? j : undefined;
    });
    const jobSeconds = (performance.now() - t1) / 1000;
    if (done.done !== opts.uploads) throw new Error(`job re-ran ${done.done} of ${opts.uploads} (failed ${done.failed})`);
    return {
      scenario: `reprocess: ${opts.uploads} images (640×480 JPEG) × 3 variants, a job (concurrency ${opts.concurrency}) vs a plain sharp loop`,
      jobUploadsPerSecond: Number((opts.uploads / jobSeconds).toFixed(1)),
      loopUploadsPerSecond: Number((opts.uploads / loopSeconds).toFixed(1)),
      overheadRatio: Number((jobSeconds / loopSeconds).toFixed(2)),
    };
  } finally {
    await pool.end();
    await api.proc.stop();
    await worker.proc.stop();
  }
}

export async function gateLatency(services: BenchServices, opts: { uploads: number }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-bench-clamd-'));
  const clamd = await startClamd({ port: await getPort({ host: '127.0.0.1' }), dir });
  const env = { CLAMD_ADDRESS: clamd.address, CLAMD_MAX_BYTES: String(clamd.maxBytes) };
  const api = await startOncelyProcess(services, 'api', env);
  const worker = await startOncelyProcess(services, 'worker', env);
  const pool = createPool(services.databaseUrl, 1);
  try {
    const tenant = await createTenant(pool, 'bench-gate');
    const auth = { authorization: `Bearer ${tenant.apiKey}` };
    const declared = await fetch(`${api.url}/v1/pipelines`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'scanned', steps: [{ type: 'scan.clamav' }] }),
    });
    if (declared.status !== 201) throw new Error(`declaring answered ${declared.status}`);
    const body = Buffer.alloc(64 * 1024, 3);
    const scanner = new ClamdScanner({ address: clamd.address, timeoutSeconds: 30, maxBytes: clamd.maxBytes });
    const gated: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i < opts.uploads; i++) {
      const d0 = performance.now();
      await scanner.scan(Readable.from([body]), body.length);
      direct.push(performance.now() - d0);
      const res = await fetch(`${api.url}/v1/uploads`, {
        method: 'POST',
        headers: {
          ...auth,
          'idempotency-key': `bench-gate-${randomUUID()}`,
          'content-type': 'application/octet-stream',
          'x-pipeline': 'scanned',
        },
        body,
      });
      const t0 = performance.now();
      const { uploadId } = (await res.json()) as { uploadId: string };
      // The gate is the pipeline's only step: processed is the moment it opened.
      await within(60_000, 'gate', async () => {
        const r = await fetch(`${api.url}/v1/uploads/${uploadId}?wait=30`, { headers: auth });
        const u = (await r.json()) as { status: string; availability: string };
        return u.status === 'processed' && u.availability === 'available' ? true : undefined;
      });
      gated.push(performance.now() - t0);
    }
    gated.sort((a, b) => a - b);
    direct.sort((a, b) => a - b);
    return {
      scenario: `gate: 201 → available through a clamd scan (${opts.uploads} uploads of 64 KiB, one at a time) vs INSTREAM alone`,
      p50Ms: Number(percentile(gated, 50).toFixed(1)),
      p99Ms: Number(percentile(gated, 99).toFixed(1)),
      scanOnlyP50Ms: Number(percentile(direct, 50).toFixed(1)),
      scanOnlyP99Ms: Number(percentile(direct, 99).toFixed(1)),
    };
  } finally {
    await pool.end();
    await api.proc.stop();
    await worker.proc.stop();
    await clamd.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const LADDER = [
  { height: 360, bitrate: '800k' },
  { height: 720, bitrate: '2500k' },
];

/** A 30 s 1280×720 clip with sound, encoded once for both sides. */
async function clip720(dir: string): Promise<string> {
  const out = path.join(dir, 'clip.mp4');
  await run('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', 'testsrc2=duration=30:size=1280x720:rate=30', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=30'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', out],
  ]);
  return out;
}

export async function hlsOverhead(services: BenchServices, opts: { rounds: number }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncely-bench-hls-'));
  const api = await startOncelyProcess(services, 'api');
  const worker = await startOncelyProcess(services, 'worker');
  const pool = createPool(services.databaseUrl, 1);
  try {
    const source = await clip720(dir);
    const bytes = readFileSync(source);
    const tenant = await createTenant(pool, 'bench-hls');
    const auth = { authorization: `Bearer ${tenant.apiKey}` };
    const declared = await fetch(`${api.url}/v1/pipelines`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ladder', steps: [{ type: 'video.hls', ladder: LADDER, segmentSeconds: 6, poster: false }] }),
    });
    if (declared.status !== 201) throw new Error(`declaring answered ${declared.status}`);
    const pipelineSeconds: number[] = [];
    const directSeconds: number[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      // Direct: the same ffmpeg command per rung, one after another.
      const out = mkdtempSync(path.join(dir, 'direct-'));
      const d0 = performance.now();
      for (const rung of LADDER) {
        const name = `hls-${rung.height}p`;
        const rungDir = path.join(out, name);
        mkdirSync(rungDir, { recursive: true });
        await run('ffmpeg', [
          '-hide_banner',
          '-loglevel',
          'error',
          '-nostdin',
          '-y',
          ...rungArgs({
            input: source,
            demuxer: 'mov',
            rung,
            name,
            dir: rungDir,
            playlist: path.join(out, `${name}.m3u8`),
            segmentSeconds: 6,
            audio: true,
          }),
        ]);
      }
      directSeconds.push((performance.now() - d0) / 1000);
      // Through the pipeline: from the 201 to processed (the upload itself is not counted).
      const res = await fetch(`${api.url}/v1/uploads`, {
        method: 'POST',
        headers: { ...auth, 'idempotency-key': `bench-hls-${randomUUID()}`, 'content-type': 'video/mp4', 'x-pipeline': 'ladder' },
        body: bytes,
      });
      const t0 = performance.now();
      const { uploadId } = (await res.json()) as { uploadId: string };
      await within(600_000, 'hls', async () => {
        const r = await fetch(`${api.url}/v1/uploads/${uploadId}?wait=30`, { headers: auth });
        return ((await r.json()) as { status: string }).status === 'processed' ? true : undefined;
      });
      pipelineSeconds.push((performance.now() - t0) / 1000);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    return {
      scenario: `hls: a 30 s 720p clip to a 360p + 720p ladder through the pipeline (201 → processed) vs the same ffmpeg commands run directly (median of ${opts.rounds})`,
      pipelineSeconds: Number(median(pipelineSeconds).toFixed(2)),
      directSeconds: Number(median(directSeconds).toFixed(2)),
      overheadRatio: Number((median(pipelineSeconds) / median(directSeconds)).toFixed(3)),
    };
  } finally {
    await pool.end();
    await api.proc.stop();
    await worker.proc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
