// Scenario "embedded": the memory of the embedded default (`npm start`: API, both workers,
// PGlite, the local store, the Temporal dev server as a child), started cold from a fresh
// data directory through bin/oncely-node. Per tree measured (this one by default; pass
// --embedded-trees a,b to compare builds in the same run): idle RSS 20 s after it serves,
// the split it reports itself (/metrics oncely_memory_bytes: V8 heap, external incl.
// PGlite's WebAssembly memory, libvips cache; the rest is native code, malloc and the
// workflow thread), the dev server's RSS, and the peak (VmHWM) over start-up and a
// workload: 20 small uploads, 5 PNG images (transcoded by sharp), one 64 MiB upload; then
// idle RSS and peak of a restart on the same data (no initdb).
// Baseline: an idle bare node with the launcher's flags, measured in the same run.
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import getPort from 'get-port';
import sharp from 'sharp';
import { startProcess, waitUntil } from '../src/devstack/process';
import { median } from './lib/stats';

const MiB = 1024 * 1024;
const root = path.resolve(import.meta.dirname, '..');

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

function childPids(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((t) =>
    readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
  );
}

async function split(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const parts: Record<string, number> = {};
  for (const m of text.matchAll(/^oncely_memory_bytes\{part="([a-z_0-9]+)"\} (\S+)$/gm)) parts[m[1]!] = Number(m[2]) / MiB;
  return parts;
}

async function bareNodeIdleMiB(): Promise<number> {
  const log = path.join(os.tmpdir(), `bare-node-${process.pid}.log`);
  const proc = startProcess(
    'node',
    [
      '--expose-gc',
      '--max-semi-space-size=4',
      '--v8-pool-size=2',
      '--no-concurrent-array-buffer-sweeping',
      '-e',
      'setInterval(() => {}, 1000)',
    ],
    {
      logFile: log,
      env: { ...process.env, MALLOC_ARENA_MAX: '2' },
    },
  );
  await sleep(3000);
  const rss = status(proc.child.pid!, 'VmRSS');
  await proc.stop();
  rmSync(log, { force: true });
  return rss;
}

async function upload(url: string, apiKey: string, body: Buffer, contentType: string): Promise<string> {
  const res = await fetch(`${url}/v1/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'idempotency-key': `bench-embedded-${randomUUID()}`, 'content-type': contentType },
    body,
  });
  if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { uploadId: string }).uploadId;
}

async function startEmbedded(tree: string, dataDir: string) {
  const port = await getPort({ host: '127.0.0.1' });
  const url = `http://127.0.0.1:${port}`;
  const proc = startProcess('sh', [path.join(tree, 'bin/oncely-node'), 'all'], {
    logFile: path.join(dataDir, 'oncely.log'),
    cwd: tree,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      TEMPORAL_UI_PORT: String(await getPort({ host: '127.0.0.1' })),
      LOG_LEVEL: 'warn',
    },
  });
  await waitUntil('embedded default', async () => (await fetch(`${url}/healthz`)).ok, { proc, timeoutMs: 180_000 });
  return { proc, url };
}

async function measureTree(tree: string) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'oncely-bench-embedded-'));
  let { proc, url } = await startEmbedded(tree, dataDir);
  try {
    const pid = proc.child.pid!;
    await sleep(20_000);
    const idle = status(pid, 'VmRSS');
    const startPeak = status(pid, 'VmHWM');
    const parts = await split(url);
    const devServer = childPids(pid)
      .map((p) => status(p, 'VmRSS'))
      .reduce((a, b) => a + b, 0);
    const apiKey = readFileSync(path.join(dataDir, 'dev-tenant-key'), 'utf8').trim();
    for (let i = 0; i < 20; i++) await upload(url, apiKey, randomBytes(4096), 'application/octet-stream');
    const images: string[] = [];
    for (let i = 0; i < 5; i++) {
      const png = await sharp(randomBytes(1024 * 1024 * 3), { raw: { width: 1024, height: 1024, channels: 3 } })
        .png()
        .toBuffer();
      images.push(await upload(url, apiKey, png, 'image/png'));
    }
    for (const id of images) await fetch(`${url}/v1/uploads/${id}?wait=60`, { headers: { authorization: `Bearer ${apiKey}` } });
    await upload(url, apiKey, randomBytes(64 * MiB), 'application/octet-stream');
    await sleep(10_000);
    const peak = status(pid, 'VmHWM');
    const after = status(pid, 'VmRSS');
    // A restart on the same data: no initdb this time (the first start's peak is PGlite's initdb).
    await proc.stop('SIGTERM', 30_000);
    ({ proc, url } = await startEmbedded(tree, dataDir));
    await sleep(20_000);
    return {
      idle,
      startPeak,
      peak,
      after,
      devServer,
      parts,
      restartIdle: status(proc.child.pid!, 'VmRSS'),
      restartPeak: status(proc.child.pid!, 'VmHWM'),
    };
  } finally {
    await proc.stop('SIGTERM', 30_000);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function embeddedMemory(opts: { rounds: number; trees?: string[] }) {
  const trees = opts.trees?.length ? opts.trees : [root];
  for (const tree of trees) if (tree !== root) execFileSync('node', ['scripts/build.mjs'], { cwd: tree });
  const bare: number[] = [];
  const byTree = new Map<string, Awaited<ReturnType<typeof measureTree>>[]>(trees.map((t) => [t, []]));
  for (let round = 0; round < opts.rounds; round++) {
    bare.push(await bareNodeIdleMiB());
    for (const tree of trees) byTree.get(tree)!.push(await measureTree(tree));
  }
  const bareIdle = median(bare);
  const row: Record<string, unknown> = {
    scenario: 'embedded default memory (MiB, median of rounds)',
    rounds: opts.rounds,
    bareNodeIdle: +bareIdle.toFixed(1),
  };
  for (const [tree, runs] of byTree) {
    const label = tree === root ? 'this' : path.basename(tree);
    const m = (f: (r: (typeof runs)[number]) => number) => +median(runs.map(f)).toFixed(1);
    const idle = m((r) => r.idle);
    Object.assign(row, {
      [`${label}: idle RSS`]: idle,
      [`${label}: idle / bare node`]: +(idle / bareIdle).toFixed(2),
      [`${label}: V8 heap`]: m((r) => r.parts.v8_heap ?? 0),
      [`${label}: external`]: m((r) => r.parts.external ?? 0),
      [`${label}: PGlite wasm`]: m((r) => r.parts.pglite_wasm ?? 0),
      [`${label}: libvips cache`]: m((r) => r.parts.libvips_cache ?? 0),
      [`${label}: rest (native, malloc, workflow thread)`]: m((r) => r.idle - (r.parts.v8_heap ?? 0) - (r.parts.external ?? 0)),
      [`${label}: dev server RSS`]: m((r) => r.devServer),
      [`${label}: start-up peak`]: m((r) => r.startPeak),
      [`${label}: peak with workload`]: m((r) => r.peak),
      [`${label}: RSS after workload`]: m((r) => r.after),
      [`${label}: restart idle RSS`]: m((r) => r.restartIdle),
      [`${label}: restart peak`]: m((r) => r.restartPeak),
    });
  }
  return row;
}
