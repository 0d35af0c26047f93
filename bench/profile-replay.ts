// Ad-hoc: CPU profile of the API under replay load (node --cpu-prof), top self-time functions.
import { randomUUID, createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import getPort from 'get-port';
import { startServices, startOncelyProcess } from './lib/services';
import { httpLoad } from './lib/load';
import { startProcess, waitUntil } from '../src/devstack/process';

const services = await startServices();
const worker = await startOncelyProcess(services, 'worker');
const port = await getPort();
const profDir = '/tmp/oncely-prof';
rmSync(profDir, { recursive: true, force: true });
const api = startProcess(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--import', 'tsx', 'src/main.ts', 'api'], {
  logFile: '/tmp/prof-api.log',
  env: { ...process.env, ...services.env, PORT: String(port) },
});
const url = `http://127.0.0.1:${port}`;
await waitUntil('api', async () => (await fetch(`${url}/healthz`)).ok, { proc: api });
const body = Buffer.alloc(4096, 0x61);
const headers = { authorization: `Bearer ${services.apiKey}`, 'idempotency-key': `prof-${randomUUID()}`, 'content-type': 'application/octet-stream', 'x-file-sha256': createHash('sha256').update(body).digest('hex') };
console.log((await fetch(`${url}/v1/uploads`, { method: 'POST', headers, body })).status);
console.log(await httpLoad({ url: `${url}/v1/uploads`, method: 'POST', headers, body, connections: 4, duration: 5 }));
await api.stop('SIGTERM');
await worker.proc.stop();
await services.stop();
const file = readdirSync(profDir)[0]!;
const prof = JSON.parse(readFileSync(path.join(profDir, file), 'utf8'));
const self = new Map<string, number>();
const dt = new Map<number, number>();
prof.samples.forEach((id: number, i: number) => dt.set(id, (dt.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
for (const n of prof.nodes) {
  const k = `${n.callFrame.functionName || '(anon)'} ${path.basename(n.callFrame.url)}:${n.callFrame.lineNumber}`;
  self.set(k, (self.get(k) ?? 0) + (dt.get(n.id) ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
for (const [k, v] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(((v / total) * 100).toFixed(1).padStart(5), k);
