// Ad-hoc: CPU profile of the API or the worker (the production bundle through
// bin/oncely-node, with node --cpu-prof) under one load, then where its time goes: by
// package and by function.
//   npx tsx bench/profile-api.ts [replay|new] [seconds] [api|worker] [pattern]   (after npm run build)
// replay: one completed key sent again and again; new: 4 KiB uploads with fresh keys.
// pattern: a regular expression over Oncely's own function names (the bundle's); the time in
// the matching functions and all they call, each sample counted once, is printed per request
// (e.g. the payload codec: '^(encode|decode|learn|draftRunKey|recorded)$').
import { randomUUID, createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { startServices, startOncelyProcess } from './lib/services';
import { closedLoop, httpLoad } from './lib/load';

const mode = process.argv[2] === 'new' ? 'new' : 'replay';
const seconds = Number(process.argv[3] ?? 10);
const profiled = process.argv[4] === 'worker' ? 'worker' : 'api';
const inclusive = process.argv[5] ? new RegExp(process.argv[5]) : undefined;
const profDir = process.env.PROFILE_DIR ?? '/tmp/oncely-prof';
rmSync(profDir, { recursive: true, force: true });

const services = await startServices();
let requests = 0;
// bin/oncely-node puts ONCELY_NODE_FLAGS after its own flags; only the profiled role gets them.
const start = async (role: 'api' | 'worker') => {
  if (role === profiled) process.env.BENCH_EXTRA_NODE_FLAGS = `--cpu-prof --cpu-prof-dir=${profDir}`;
  try {
    return await startOncelyProcess(services, role);
  } finally {
    delete process.env.BENCH_EXTRA_NODE_FLAGS;
  }
};
const worker = await start('worker');
const api = await start('api');
const body = Buffer.alloc(4096, 0x61);
const headers = (key: string) => ({
  authorization: `Bearer ${services.apiKey}`,
  'idempotency-key': key,
  'content-type': 'application/octet-stream',
  'x-file-sha256': createHash('sha256').update(body).digest('hex'),
});
const post = async (key: string) => (await fetch(`${api.url}/v1/uploads`, { method: 'POST', headers: headers(key), body })).status;
try {
  const key = `prof-${randomUUID()}`;
  console.log('first upload', await post(key));
  const load =
    mode === 'replay'
      ? await httpLoad({ url: `${api.url}/v1/uploads`, method: 'POST', headers: headers(key), body, connections: 4, duration: seconds })
      : await closedLoop(8, seconds, () => post(`prof-${randomUUID()}`));
  console.log(mode, { requests: load.requests, rps: load.rps, statuses: load.statuses });
  requests = load.requests;
} finally {
  await api.proc.stop();
  await worker.proc.stop();
  await services.stop();
}

const file = readdirSync(profDir)[0]!;
const prof = JSON.parse(readFileSync(path.join(profDir, file), 'utf8'));
const dt = new Map<number, number>();
prof.samples.forEach((id: number, i: number) => dt.set(id, (dt.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
const byFunction = new Map<string, number>();
const byPackage = new Map<string, number>();
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
for (const n of prof.nodes) {
  const t = dt.get(n.id) ?? 0;
  const url: string = n.callFrame.url;
  add(byFunction, `${n.callFrame.functionName || '(anon)'} ${path.basename(url)}:${n.callFrame.lineNumber}`, t);
  const pkg =
    /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ??
    (url.includes('/dist/')
      ? 'oncely (dist)'
      : url.startsWith('node:')
        ? 'node core'
        : n.callFrame.functionName.startsWith('(')
          ? n.callFrame.functionName
          : 'other');
  add(byPackage, pkg, t);
}
const total = [...byFunction.values()].reduce((a, b) => a + b, 0);
const top = (m: Map<string, number>, n: number) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((v / total) * 100).toFixed(1).padStart(5)} % ${k}`)
    .join('\n');
console.log(
  `\nby package (self time, ${(total / 1e6).toFixed(1)} s sampled)\n${top(byPackage, 15)}\n\nby function\n${top(byFunction, 25)}`,
);

if (inclusive) {
  // Samples whose stack passes through a matching function of Oncely's bundle.
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map<number, { callFrame: { functionName: string; url: string } }>(prof.nodes.map((n: { id: number }) => [n.id, n]));
  const matches = (id: number) => {
    const f = byId.get(id)!.callFrame;
    return f.url.includes('/dist/') && inclusive.test(f.functionName);
  };
  let within = 0;
  const byMatch = new Map<string, number>();
  for (const [id, t] of dt) {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at))
      if (matches(at)) {
        within += t;
        const f = byId.get(at)!.callFrame as { functionName: string; url: string; lineNumber?: number };
        add(byMatch, `${f.functionName} ${path.basename(f.url)}:${f.lineNumber}`, t);
        break;
      }
  }
  console.log(`\nmatched (the innermost matching frame)\n${top(byMatch, 10)}`);
  console.log(
    `\nwithin /${inclusive.source}/ (inclusive): ${(within / 1e3).toFixed(0)} ms of ${(total / 1e3).toFixed(0)} ms sampled (${((within / total) * 100).toFixed(1)} %), ${(within / 1e3 / Math.max(1, requests)).toFixed(3)} ms per request`,
  );
}
