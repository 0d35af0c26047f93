// Scenario "direct": the same file (256 MiB by default) through the API (one POST
// /v1/uploads) and as a direct upload (plan → one presigned PUT to the S3 server →
// complete), each on an API process of its own. Reports, per mode, the API process's CPU
// seconds and the bytes it read (/proc/<pid>/io rchar: sockets and files), and MiB/s.
// Expectation: a direct upload's API cost is a few small JSON requests, whatever the size.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { cpuSnapshot } from './lib/cpu';
import type { BenchServices } from './lib/services';
import { startOncelyProcess } from './lib/services';
import { body, expectedSha, postLarge } from './large-upload';

const MiB = 1024 * 1024;

function bytesRead(pid: number): number {
  const m = /rchar:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

async function json(url: string, method: string, headers: Record<string, string>, payload?: unknown) {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) },
    body: payload ? JSON.stringify(payload) : undefined,
  });
  return { status: res.status, json: (await res.json()) as any };
}

function putSigned(signed: { url: string; headers: Record<string, string> }, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(signed.url, { method: 'PUT', headers: signed.headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    body(bytes).pipe(req);
  });
}

async function directUpload(url: string, apiKey: string, bytes: number, sha: string): Promise<any> {
  const auth = { authorization: `Bearer ${apiKey}`, 'idempotency-key': `bench-direct-${randomUUID()}` };
  const plan = await json(`${url}/v1/direct-uploads`, 'POST', auth, { bytes, sha256: sha, fileName: 'bench.bin' });
  if (plan.status !== 201 || !plan.json.upload) throw new Error(`plan failed: ${JSON.stringify(plan)}`);
  const put = await putSigned(plan.json.upload, bytes);
  if (put !== 200) throw new Error(`PUT to the store failed: ${put}`);
  const done = await json(`${url}/v1/direct-uploads/${plan.json.id}/complete`, 'POST', { authorization: auth.authorization });
  if (done.status !== 201 || done.json.sha256 !== sha) throw new Error(`complete failed: ${JSON.stringify(done)}`);
  return done.json;
}

export async function directVsThroughApi(services: BenchServices, opts: { bytes: number; rounds: number }) {
  const worker = await startOncelyProcess(services, 'worker');
  const sha = expectedSha(opts.bytes);
  const rows: { mode: string; apiCpuSeconds: number; apiBytesRead: number; mibps: number }[] = [];
  try {
    for (let round = 0; round < opts.rounds; round++) {
      for (const mode of ['through the API', 'direct'] as const) {
        const api = await startOncelyProcess(services, 'api');
        const pid = api.proc.child.pid!;
        const cpu0 = cpuSnapshot({ api: pid }).api;
        const read0 = bytesRead(pid);
        const t = performance.now();
        if (mode === 'direct') await directUpload(api.url, services.apiKey, opts.bytes, sha);
        else {
          const res = await postLarge(api.url, services.apiKey, opts.bytes);
          if (res.status !== 201 || res.json.sha256 !== sha) throw new Error(`one-request upload failed: ${res.status}`);
        }
        const seconds = (performance.now() - t) / 1000;
        rows.push({
          mode,
          apiCpuSeconds: cpuSnapshot({ api: pid }).api - cpu0,
          apiBytesRead: bytesRead(pid) - read0,
          mibps: opts.bytes / MiB / seconds,
        });
        await api.proc.stop();
      }
    }
  } finally {
    await worker.proc.stop();
  }
  const median = (mode: string, k: 'apiCpuSeconds' | 'apiBytesRead' | 'mibps') => {
    const xs = rows
      .filter((r) => r.mode === mode)
      .map((r) => r[k])
      .sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)]!;
  };
  const round2 = (x: number) => Math.round(x * 100) / 100;
  return {
    scenario: `direct upload vs through the API (${opts.bytes / MiB} MiB)`,
    bytes: opts.bytes,
    rounds: opts.rounds,
    throughApiCpuSeconds: round2(median('through the API', 'apiCpuSeconds')),
    directApiCpuSeconds: round2(median('direct', 'apiCpuSeconds')),
    throughApiBytesReadMiB: round2(median('through the API', 'apiBytesRead') / MiB),
    directApiBytesReadMiB: round2(median('direct', 'apiBytesRead') / MiB),
    throughApiMiBps: round2(median('through the API', 'mibps')),
    directMiBps: round2(median('direct', 'mibps')),
    // The headline: the API's CPU for a direct upload as a share of carrying the bytes (lower is better).
    directApiCpuShare: round2(median('direct', 'apiCpuSeconds') / Math.max(0.01, median('through the API', 'apiCpuSeconds'))),
  };
}
