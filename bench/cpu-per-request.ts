// Ad-hoc: CPU cost per replayed request, split by process (API, PostgreSQL), for Oncely and
// the bare-SELECT baseline under the same load. Tells where the replay gap comes from.
// Usage: npm run build && npx tsx bench/cpu-per-request.ts [connections] [seconds]
import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import getPort from 'get-port';
import { startProcess, waitUntil } from '../src/devstack/process';
import { httpLoad } from './lib/load';
import { startOncelyProcess, startServices } from './lib/services';

const connections = Number(process.argv[2] ?? 16);
const seconds = Number(process.argv[3] ?? 5);
const ticks = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime, in clock ticks (1/100 s)
};
const postgresTicks = () =>
  readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .reduce((sum, d) => {
      try {
        return readFileSync(`/proc/${d}/comm`, 'utf8').startsWith('postgres') ? sum + ticks(Number(d)) : sum;
      } catch {
        return sum;
      }
    }, 0);

async function measure(label: string, pid: number, url: string, headers: Record<string, string>, body: Buffer) {
  await httpLoad({ url, method: 'POST', headers, body, connections, duration: 2 }); // warm-up
  const [a0, p0] = [ticks(pid), postgresTicks()];
  const r = await httpLoad({ url, method: 'POST', headers, body, connections, duration: seconds });
  const [a1, p1] = [ticks(pid), postgresTicks()];
  const us = (t: number) => ((t * 10_000) / r.requests).toFixed(0);
  console.log(
    `${label.padEnd(10)} ${r.rps.toFixed(0).padStart(6)} req/s  server ${us(a1 - a0).padStart(4)} µs/req  postgres ${us(p1 - p0).padStart(4)} µs/req  p99 ${r.p99ms} ms`,
  );
}

const services = await startServices();
const worker = await startOncelyProcess(services, 'worker');
const api = await startOncelyProcess(services, 'api');
const body = Buffer.alloc(4096, 0x61);
const key = `cpu-${randomUUID()}`;
const headers = {
  authorization: `Bearer ${services.apiKey}`,
  'idempotency-key': key,
  'content-type': 'application/octet-stream',
  'x-file-sha256': createHash('sha256').update(body).digest('hex'),
};
console.log('first upload:', (await fetch(`${api.url}/v1/uploads`, { method: 'POST', headers, body })).status);
const port = await getPort({ host: '127.0.0.1' });
const bare = startProcess(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'baselines/bare-select-server.ts')], {
  logFile: path.join(services.dir, 'bare.log'),
  env: { ...process.env, ...services.env, PORT: String(port) },
});
await waitUntil('bare', async () => (await fetch(`http://127.0.0.1:${port}/`)).status === 404, { proc: bare });
for (let i = 0; i < 2; i++) {
  await measure('oncely', api.proc.child.pid!, `${api.url}/v1/uploads`, headers, body);
  await measure(
    'baseline',
    bare.child.pid!,
    `http://127.0.0.1:${port}/replay/${services.tenantId}/${key}`,
    { 'content-type': 'application/octet-stream' },
    body,
  );
}
await Promise.all([api.proc.stop(), worker.proc.stop(), bare.stop()]);
await services.stop();
