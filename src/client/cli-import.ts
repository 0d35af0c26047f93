// `oncely import URL... | --from-file urls.txt`: files that live elsewhere, imported exactly
// once each. A URL's key is derived from the URL itself (or given with --key), so a run that
// is interrupted and started again, or repeated, answers the same uploads instead of
// importing anything twice. A progress bar per import shows the bytes the server has read.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import cliProgress from 'cli-progress';
import { LifecycleClient, OncelyApiError } from './lifecycle-client';
import { EXIT } from './cli-upload';

export interface ImportCommandOptions {
  server: string;
  token: string;
  json: boolean;
  fromFile?: string;
  key?: string;
  concurrency: number;
  progress: boolean;
  /** Give up waiting (not the import: it goes on) after this many seconds per URL. */
  timeout: number;
}

/** The key a URL is imported under unless one is given: the same URL, the same upload. */
export function importKeyFor(url: string): string {
  return `oncely-import-${createHash('sha256').update(url).digest('hex').slice(0, 40)}`;
}

/** The URLs of a list file: one per line; blank lines and `#` comments skipped. */
export function urlsOf(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

type Outcome = { url: string; key: string; status: number; upload?: Record<string, any>; error?: string; detail?: string };

export async function runImport(urls: string[], o: ImportCommandOptions): Promise<number> {
  const all = [...urls, ...(o.fromFile ? urlsOf(await readFile(o.fromFile, 'utf8')) : [])];
  if (all.length === 0) {
    console.error('oncely: give URLs, or --from-file with one URL per line');
    return EXIT.usage;
  }
  if (o.key && all.length !== 1) {
    console.error('oncely: --key names the key of one URL');
    return EXIT.usage;
  }
  const client = new LifecycleClient({ baseUrl: o.server, token: o.token });
  const bars =
    o.progress && !o.json && process.stderr.isTTY ? new cliProgress.MultiBar(barFormat, cliProgress.Presets.shades_classic) : undefined;
  const outcomes: Outcome[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < all.length; i = next++) {
      const url = all[i]!;
      const outcome = await importOne(client, url, o.key ?? importKeyFor(url), o, bars);
      outcomes.push(outcome);
      if (o.json) console.log(JSON.stringify(outcome));
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency, all.length)) }, worker));
  } finally {
    bars?.stop();
  }
  if (!o.json) {
    for (const r of outcomes) {
      if (r.upload && r.status < 300) console.log(`${r.upload.uploadId}  ${r.upload.bytes} bytes  ${r.url}`);
      else if (r.upload) console.log(`${r.upload.uploadId}  still importing (${r.upload.bytesFetched} bytes so far)  ${r.url}`);
      else console.error(`oncely: ${r.url}: ${r.status} ${r.error ?? ''}: ${r.detail ?? ''}`);
    }
  }
  if (outcomes.some((r) => r.status >= 400)) return EXIT.rejected;
  return outcomes.every((r) => r.status < 300) ? EXIT.ok : EXIT.gaveUp;
}

const barFormat = { format: '{bar} {percentage}% | {value}/{total} bytes | {name}', hideCursor: true, clearOnComplete: false };

/** Starts (or attaches to) the import of `url`, then follows its progress until it commits, fails or `timeout` passes. */
async function importOne(
  client: LifecycleClient,
  url: string,
  key: string,
  o: ImportCommandOptions,
  bars?: cliProgress.MultiBar,
): Promise<Outcome> {
  const deadline = Date.now() + o.timeout * 1000;
  let bar: cliProgress.SingleBar | undefined;
  try {
    const started = await client.importUrl(key, { url }, { waitSeconds: 1 });
    if (started.status === 201) return { url, key, status: 201, upload: started.body };
    const id = started.body.uploadId as string;
    bar = bars?.create(1, 0, { name: url });
    for (;;) {
      const seen = await client.getUpload(id, { waitSeconds: Math.max(1, Math.min(2, Math.ceil((deadline - Date.now()) / 1000))) });
      if (seen.status === 'failed') {
        const error = (seen.error ?? {}) as { error?: string; detail?: string; status?: number };
        return { url, key, status: error.status ?? 422, error: error.error, detail: error.detail };
      }
      if (seen.status !== 'importing') return { url, key, status: 201, upload: seen };
      bar?.setTotal(seen.bytesTotal ?? Math.max(1, seen.bytesFetched));
      bar?.update(seen.bytesFetched);
      if (Date.now() >= deadline) return { url, key, status: 202, upload: seen };
    }
  } catch (err) {
    if (!(err instanceof OncelyApiError)) throw err;
    return { url, key, status: err.status, error: err.problem.error, detail: err.problem.detail };
  } finally {
    if (bar) bars?.remove(bar);
  }
}
