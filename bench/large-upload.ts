// Scenario 1: a large upload through POST /v1/uploads versus the same bytes sent straight
// to the same S3 server the way a careful user would — @aws-sdk/lib-storage's multipart and
// one streamed PutObject, the faster of the two being the baseline. Alternates them,
// reports medians, the throughput ratio, CPU per upload per component and the API process's
// peak resident memory.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { BenchServices } from './lib/services';
import { peakRssMiB, startOncelyProcess } from './lib/services';
import { median } from './lib/stats';
import { measureCpu, medianCpu } from './lib/cpu';

const CHUNK = 1024 * 1024;

/** A deterministic body of `bytes` bytes, generated on the fly (never held in memory). */
export function body(bytes: number): Readable {
  const block = Buffer.alloc(CHUNK);
  for (let i = 0; i < CHUNK; i++) block[i] = (i * 31 + 7) & 0xff;
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= bytes) return void this.push(null);
      const n = Math.min(CHUNK, bytes - sent);
      sent += n;
      this.push(n === CHUNK ? block : block.subarray(0, n));
    },
  });
}

export function expectedSha(bytes: number): string {
  const h = createHash('sha256');
  const src = body(bytes);
  let chunk: Buffer | null;
  while ((chunk = src.read()) !== null) h.update(chunk);
  return h.digest('hex');
}

export function postLarge(url: string, apiKey: string, bytes: number): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/uploads`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'idempotency-key': `bench-large-${randomUUID()}`,
        'content-type': 'application/octet-stream',
        'content-length': String(bytes),
        prefer: 'wait=120',
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    body(bytes).pipe(req);
  });
}

export async function largeUpload(services: BenchServices, opts: { bytes: number; rounds: number }) {
  const api = await startOncelyProcess(services, 'api');
  const worker = await startOncelyProcess(services, 'worker');
  const s3 = new S3Client({
    endpoint: services.s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: services.s3.accessKeyId, secretAccessKey: services.s3.secretAccessKey },
    // As Oncely's store sends (src/storage/s3-store.ts): a streamed body without aws-chunked
    // checksums, which versitygw refuses when the stream's chunks are under 8 KiB.
    requestChecksumCalculation: 'WHEN_REQUIRED',
  });
  const sha = expectedSha(opts.bytes);
  const oncely: number[] = [];
  const libStorage: number[] = [];
  const singlePut: number[] = [];
  const cpu: Record<string, number>[] = [];
  const pids = { api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids };
  try {
    for (let round = 0; round < opts.rounds; round++) {
      let t = performance.now();
      cpu.push(
        await measureCpu(pids, async () => {
          const res = await postLarge(api.url, services.apiKey, opts.bytes);
          if (res.status !== 201 || res.json.sha256 !== sha)
            throw new Error(`large upload failed: ${res.status} ${JSON.stringify(res.json)}`);
          return 1;
        }),
      );
      oncely.push(opts.bytes / ((performance.now() - t) / 1000));

      // What a careful user would write instead: lib-storage's multipart, or one streamed
      // PutObject of known length; the baseline is whichever is faster in this run.
      t = performance.now();
      await new Upload({
        client: s3,
        params: { Bucket: services.s3.bucket, Key: `direct/${randomUUID()}`, Body: body(opts.bytes) },
        partSize: Number(services.env.S3_PART_SIZE_MIB ?? 8) * CHUNK,
        queueSize: Number(services.env.S3_QUEUE_SIZE ?? 4),
      }).done();
      libStorage.push(opts.bytes / ((performance.now() - t) / 1000));

      t = performance.now();
      await s3.send(
        new PutObjectCommand({
          Bucket: services.s3.bucket,
          Key: `direct/${randomUUID()}`,
          Body: body(opts.bytes),
          ContentLength: opts.bytes,
        }),
      );
      singlePut.push(opts.bytes / ((performance.now() - t) / 1000));
    }
    const peak = await peakRssMiB(api.proc.child.pid!);
    const oncelyMiBs = median(oncely) / CHUNK;
    const libStorageMiBs = median(libStorage) / CHUNK;
    const singlePutMiBs = median(singlePut) / CHUNK;
    const baselineMiBs = Math.max(libStorageMiBs, singlePutMiBs);
    return {
      scenario: 'large upload',
      bytes: opts.bytes,
      rounds: opts.rounds,
      oncelyMiBps: round1(oncelyMiBs),
      libStorageMiBps: round1(libStorageMiBs),
      singlePutMiBps: round1(singlePutMiBs),
      baseline: singlePutMiBs >= libStorageMiBs ? 'single PutObject' : 'lib-storage multipart',
      ratio: round2(oncelyMiBs / baselineMiBs),
      apiPeakRssMiB: round1(peak),
      // CPU per upload of `bytes` (ms), per component.
      cpuMsPerUpload: JSON.stringify(medianCpu(cpu)),
    };
  } finally {
    s3.destroy();
    await api.proc.stop();
    await worker.proc.stop();
  }
}

const round1 = (n: number) => Math.round(n * 10) / 10;
const round2 = (n: number) => Math.round(n * 100) / 100;
