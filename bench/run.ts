// `npm run bench`: runs each scenario against real services on loopback, Oncely and its
// baseline alternating in the same run, prints a table and writes JSON under bench/results/.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startServices } from './lib/services';
import { largeUpload } from './large-upload';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', multiple: true },
    'large-bytes': { type: 'string', default: String(1024 ** 3) },
    rounds: { type: 'string', default: '3' },
  },
});

const wanted = new Set(values.scenario ?? ['large']);
const services = await startServices();
const results: Record<string, unknown>[] = [];
try {
  if (wanted.has('large')) results.push(await largeUpload(services, { bytes: Number(values['large-bytes']), rounds: Number(values.rounds) }));
} finally {
  await services.stop();
}
console.table(results);
const out = path.resolve(import.meta.dirname, 'results');
mkdirSync(out, { recursive: true });
writeFileSync(path.join(out, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`), JSON.stringify(results, null, 2));
