// Ad-hoc: the payload codec's CPU per new upload by thread, off and on side by side (both
// stacks take 4 KiB uploads at once on shared services), from /proc/<pid>/task/*/stat.
//   npx tsx bench/thread-cpu-ab.ts [seconds]   (after npm run build)
// AB_ON='{"PAYLOAD_KEY_LISTEN":"false"}' replaces the second stack's settings (JSON of env).
import { createHash, randomUUID } from 'node:crypto';
import { threadCpuSeconds as threads } from './lib/cpu';
import { closedLoop } from './lib/load';
import { startOncelyProcess, startServices } from './lib/services';

const seconds = Number(process.argv[2] ?? 60);
const services = await startServices();
const modes = {
  off: { PAYLOAD_ENCRYPTION: 'false' },
  on: process.env.AB_ON ? (JSON.parse(process.env.AB_ON) as Record<string, string>) : { PAYLOAD_ENCRYPTION: 'true' },
} as const;
type Mode = keyof typeof modes;

const body = Buffer.alloc(4096, 0x61);
const sha = createHash('sha256').update(body).digest('hex');
const stacks = {} as Record<
  Mode,
  { api: Awaited<ReturnType<typeof startOncelyProcess>>; worker: Awaited<ReturnType<typeof startOncelyProcess>> }
>;
try {
  for (const mode of Object.keys(modes) as Mode[]) {
    const env = { ...modes[mode], TASK_QUEUE_UPLOADS: `uploads-ab-${mode}`, TASK_QUEUE_TRANSCODE: `transcode-ab-${mode}` };
    stacks[mode] = { worker: await startOncelyProcess(services, 'worker', env), api: await startOncelyProcess(services, 'api', env) };
  }
  const post = (mode: Mode) =>
    fetch(`${stacks[mode].api.url}/v1/uploads`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${services.apiKey}`,
        'idempotency-key': `ab-${randomUUID()}`,
        'content-type': 'application/octet-stream',
        'x-file-sha256': sha,
      },
      body,
    }).then((r) => r.status);
  // Warm-up, then the measured phase.
  await Promise.all((Object.keys(modes) as Mode[]).map((m) => closedLoop(4, 5, () => post(m))));
  const pid = (m: Mode, role: 'api' | 'worker') => stacks[m][role].proc.child.pid!;
  const before = new Map<string, Map<string, number>>();
  for (const m of Object.keys(modes) as Mode[]) for (const r of ['api', 'worker'] as const) before.set(`${m}.${r}`, threads(pid(m, r)));
  const loads = await Promise.all((Object.keys(modes) as Mode[]).map((m) => closedLoop(4, seconds, () => post(m))));
  const done = Object.fromEntries((Object.keys(modes) as Mode[]).map((m, i) => [m, loads[i]!.requests]));
  console.log('uploads', done);
  for (const r of ['api', 'worker'] as const) {
    const rows: Record<string, Record<string, string>> = {};
    for (const m of Object.keys(modes) as Mode[]) {
      const after = threads(pid(m, r));
      const was = before.get(`${m}.${r}`)!;
      for (const [name, cpu] of after) {
        const ms = ((cpu - (was.get(name) ?? 0)) * 1000) / done[m]!;
        (rows[name] ??= {})[m] = ms.toFixed(2);
      }
    }
    console.log(`\n${r}: CPU ms per upload by thread`);
    console.table(rows);
  }
} finally {
  for (const s of Object.values(stacks)) await Promise.all([s.api.proc.stop(), s.worker.proc.stop()]);
  await services.stop();
}
