// `npm run bench`: every scenario against real services on loopback, Oncely and its
// baseline alternating in the same run. Prints a table, writes JSON and an SVG chart of
// the ratios under bench/results/. Bounded: each load phase has a fixed duration.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startServices } from './lib/services';
import { ratioChart } from './lib/chart';
import { largeUpload } from './large-upload';
import { resumableUpload } from './resumable';
import { directVsThroughApi } from './direct';
import { duplicateStorm, newPngUploads, newSmallUploads, replayPath } from './scenarios';
import { waitWakeup } from './wait-wakeup';
import { embeddedMemory } from './embedded-memory';
import { deleteRate, downloadLarge, listLatency } from './lifecycle';
import { historyCost } from './history';
import { gateLatency, hlsOverhead, reprocessThroughput } from './pipelines';
import { importBatch, importFromUrl } from './imports';
import { tracingOverhead } from './traces';
import { payloadEncryptionOverhead } from './payload-encryption';
import { imageVariants } from './images';
import { workerLevers } from './worker-levers';
import { consolePages } from './console';
import { recordFilters } from './record';
import { storageMigration } from './storage-migration';
import { byteQuotas } from './quotas';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', multiple: true },
    'large-bytes': { type: 'string', default: String(1024 ** 3) },
    'direct-bytes': { type: 'string', default: String(256 * 1024 ** 2) },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '16' },
    // dev: temporal server start-dev (SQLite); server: the real server on PostgreSQL, 4 shards.
    temporal: { type: 'string', default: 'dev' },
    // A directory for the S3 server's data, on the filesystem to measure (e.g. one with
    // reflinks, where completing a multipart upload does not copy the parts).
    'store-dir': { type: 'string' },
    // Scenario "list": how many uploads are seeded, smaller then larger (comma-separated).
    'list-sizes': { type: 'string', default: '10000,1000000' },
    'delete-uploads': { type: 'string', default: '200' },
    'reprocess-uploads': { type: 'string', default: '1000' },
    'gate-uploads': { type: 'string', default: '200' },
    // Scenario "embedded": other checkouts to measure beside this one (comma-separated).
    'embedded-trees': { type: 'string' },
    // Scenario "batch": items of 64 KiB in one import batch.
    'batch-items': { type: 'string', default: '1000' },
    // Scenario "console" (only when named: seeding takes minutes): the tenant's uploads and events.
    'console-uploads': { type: 'string', default: '1000000' },
    'console-events': { type: 'string', default: '5000000' },
    // Scenario "record" (only when named: seeding takes minutes): the tenant's uploads.
    'record-uploads': { type: 'string', default: '1000000' },
    // Scenario "migrate" (only when named): small uploads moved beside one of --large-bytes.
    'migrate-small': { type: 'string', default: '10000' },
    // Scenario "quotas" (only when named): usage_hours rows seeded for the usage query.
    'usage-rows': { type: 'string', default: '10000000' },
  },
});

const all = [
  'large',
  'resumable',
  'direct',
  'replay',
  'small',
  'png',
  'storm',
  'wait',
  'embedded',
  'download',
  'list',
  'delete',
  'history',
  'reprocess',
  'gate',
  'hls',
  'import',
  'batch',
  'traces',
  'images',
  'codec',
  'levers',
];
const wanted = new Set(values.scenario ?? all);
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const temporalKind = values.temporal === 'server' ? 'server' : 'dev';
if (values.temporal !== 'dev' && values.temporal !== 'server') throw new Error('--temporal is dev or server');
const services = await startServices(temporalKind, { storeDir: values['store-dir'] });
const results: Record<string, unknown>[] = [];
try {
  if (wanted.has('large')) results.push(await largeUpload(services, { bytes: Number(values['large-bytes']), rounds }));
  if (wanted.has('resumable')) results.push(await resumableUpload(services, { bytes: Number(values['large-bytes']), rounds }));
  if (wanted.has('direct')) results.push(await directVsThroughApi(services, { bytes: Number(values['direct-bytes']), rounds }));
  if (wanted.has('replay')) results.push(await replayPath(services, { seconds, rounds, connections }));
  if (wanted.has('small')) results.push(await newSmallUploads(services, { seconds, rounds, connections: Math.max(1, connections / 2) }));
  if (wanted.has('png')) results.push(await newPngUploads(services, { seconds, rounds, connections: Math.max(1, connections / 2) }));
  if (wanted.has('storm')) results.push(await duplicateStorm(services, { requests: 200 }));
  if (wanted.has('wait')) results.push(await waitWakeup(services, { rounds }));
  if (wanted.has('download')) results.push(await downloadLarge(services, { bytes: Number(values['large-bytes']), rounds }));
  if (wanted.has('list'))
    results.push(await listLatency(services, { sizes: values['list-sizes']!.split(',').map(Number), requests: 2000 }));
  if (wanted.has('delete'))
    results.push(await deleteRate(services, { uploads: Number(values['delete-uploads']), connections: Math.max(1, connections / 2) }));
  if (wanted.has('history')) results.push(await historyCost(services));
  if (wanted.has('reprocess'))
    results.push(await reprocessThroughput(services, { uploads: Number(values['reprocess-uploads']), concurrency: 8 }));
  if (wanted.has('gate')) results.push(await gateLatency(services, { uploads: Number(values['gate-uploads']) }));
  if (wanted.has('hls')) results.push(await hlsOverhead(services, { rounds }));
  if (wanted.has('import')) results.push(await importFromUrl(services, { bytes: Number(values['large-bytes']), rounds }));
  if (wanted.has('batch')) results.push(await importBatch(services, { items: Number(values['batch-items']), rounds, concurrency: 16 }));
  if (wanted.has('traces')) results.push(await tracingOverhead(services, { seconds, rounds, connections: 8 }));
  if (wanted.has('codec')) results.push(await payloadEncryptionOverhead(services, { seconds, rounds, connections: 8 }));
  if (wanted.has('console'))
    results.push(
      await consolePages(services, {
        uploads: Number(values['console-uploads']),
        events: Number(values['console-events']),
        requests: 200,
      }),
    );
  if (wanted.has('record')) results.push(await recordFilters(services, { uploads: Number(values['record-uploads']), requests: 200 }));
  if (wanted.has('migrate'))
    results.push(await storageMigration(services, { small: Number(values['migrate-small']), largeBytes: Number(values['large-bytes']) }));
  if (wanted.has('quotas'))
    results.push(await byteQuotas(services, { seconds, rounds, connections: 8, usageRows: Number(values['usage-rows']), requests: 200 }));
  if (wanted.has('levers')) results.push(await workerLevers(services, { seconds, rounds, connections: 8 }));
  if (wanted.has('images')) results.push(await imageVariants(services, { seconds, rounds, connections: 8 }));
  if (wanted.has('embedded'))
    results.push(await embeddedMemory({ rounds, trees: values['embedded-trees']?.split(',').map((t) => path.resolve(t)) }));
} finally {
  await services.stop();
}
console.log(`\nTemporal: ${temporalKind === 'server' ? 'the real server on PostgreSQL (4 history shards)' : 'the dev server (SQLite)'}`);
for (const r of results) {
  console.log(`\n${r.scenario}`);
  console.table(Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'scenario')));
}
const out = path.resolve(import.meta.dirname, 'results');
mkdirSync(out, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
writeFileSync(
  path.join(out, `bench-${stamp}.json`),
  JSON.stringify({ at: new Date().toISOString(), temporal: temporalKind, rounds, seconds, connections, results }, null, 2),
);
writeFileSync(path.join(out, `bench-${stamp}.svg`), ratioChart(results));
console.log(`\nwrote bench/results/bench-${stamp}.{json,svg}`);
