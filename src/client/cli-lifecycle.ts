// `oncely ls | get | rm | events | redeliver`: the stored uploads and their events from the
// command line, over LifecycleClient. `get` streams to FILE.part and renames it when whole
// and its SHA-256 matches; run again after a cut, it asks only for the missing bytes (Range,
// guarded by If-Range with the upload's ETag).
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import cliProgress from 'cli-progress';
import Table from 'cli-table3';
import { LifecycleClient, OncelyApiError } from './lifecycle-client';
import { EXIT } from './cli-upload';

export interface ServerOptions {
  server: string;
  token: string;
  json?: boolean;
}

const clientFor = (o: ServerOptions) => new LifecycleClient({ baseUrl: o.server, token: o.token });

/** Runs a command; an API problem is printed on stderr and exits 1. */
export async function runLifecycle(fn: () => Promise<void>): Promise<number> {
  try {
    await fn();
    return EXIT.ok;
  } catch (err) {
    if (!(err instanceof OncelyApiError)) throw err;
    console.error(`oncely: ${err.status} ${err.problem.error ?? ''}: ${err.problem.detail ?? err.message}`);
    return EXIT.rejected;
  }
}

export async function listCommand(o: ServerOptions & { status?: 'committed' | 'processed' | 'deleted'; type?: string; limit: number }) {
  const rows: Record<string, any>[] = [];
  for await (const u of clientFor(o).allUploads({ status: o.status, contentType: o.type, limit: Math.min(o.limit, 100) })) {
    rows.push(u);
    if (rows.length >= o.limit) break;
  }
  if (o.json) return void console.log(JSON.stringify(rows));
  const table = new Table({ head: ['id', 'status', 'bytes', 'type', 'name', 'created'] });
  for (const u of rows) table.push([u.uploadId, u.status, u.bytes, u.contentType, u.fileName ?? '', u.createdAt]);
  console.log(table.toString());
}

export async function getCommand(id: string, o: ServerOptions & { output: string; progress: boolean }) {
  const client = clientFor(o);
  const upload = await client.getUpload(id);
  const total = Number(upload.bytes);
  const part = `${o.output}.part`;
  const have = await stat(part).then(
    (s) => s.size,
    () => 0,
  );
  const resume = have > 0 && have < total;
  if (resume && !o.json) console.error(`oncely: resuming ${o.output} at ${have} of ${total} bytes`);
  const res = await client.content(id, resume ? { range: `bytes=${have}-`, ifRange: `"${upload.sha256}"` } : {});
  // 206: the rest is appended; 200: the file changed or the server sent it whole, so start over.
  const from = res.status === 206 ? have : 0;
  const bar = o.progress
    ? new cliProgress.SingleBar({ format: ' {bar} {percentage}% | {value}/{total} bytes' }, cliProgress.Presets.shades_classic)
    : undefined;
  bar?.start(total, from);
  let done = from;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      done += chunk.length;
      bar?.update(done);
      cb(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as never), meter, createWriteStream(part, { flags: from > 0 ? 'a' : 'w' }));
  } finally {
    bar?.stop();
  }
  const hash = createHash('sha256');
  await pipeline(createReadStream(part), hash);
  const sha256 = hash.digest('hex');
  if (sha256 !== upload.sha256) {
    await rm(part, { force: true });
    throw new OncelyApiError(0, {
      error: 'checksum_mismatch',
      detail: `downloaded bytes hash to ${sha256}, the upload is ${upload.sha256}`,
    });
  }
  await rename(part, o.output);
  if (o.json) console.log(JSON.stringify({ uploadId: id, file: o.output, bytes: total, sha256, resumedAt: from }));
  else console.error(`oncely: ${o.output} (${total} bytes, sha256 ${sha256})`);
}

export async function removeCommand(ids: string[], o: ServerOptions & { wait: number }) {
  const client = clientFor(o);
  const results =
    ids.length === 1 ? [await client.deleteUpload(ids[0]!, { waitSeconds: o.wait })] : (await client.deleteUploads(ids)).items;
  if (o.json) return void console.log(JSON.stringify(results));
  for (const r of results) console.log(`${r.uploadId} ${r.status}`);
}

export async function eventsCommand(o: ServerOptions & { failed: boolean; upload?: string; limit: number }) {
  const page = await clientFor(o).listEvents({ deliveryFailed: o.failed || undefined, uploadId: o.upload, limit: Math.min(o.limit, 100) });
  if (o.json) return void console.log(JSON.stringify(page.items));
  const table = new Table({ head: ['event', 'type', 'upload', 'created'] });
  for (const e of page.items) table.push([e.id, e.type, e.uploadId ?? '', e.createdAt]);
  console.log(table.toString());
}

export async function redeliverCommand(eventId: string, o: ServerOptions & { endpoint?: string }) {
  const r = await clientFor(o).redeliver(eventId, { endpointId: o.endpoint });
  if (o.json) return void console.log(JSON.stringify(r));
  const outcomes = (r.outcomes ?? {}) as Record<string, string>;
  for (const endpointId of r.endpointIds as string[]) console.log(`${endpointId} ${outcomes[endpointId] ?? 'started'}`);
}

export async function createTokenCommand(
  o: ServerOptions & { maxBytes?: number; types?: string[]; maxUploads?: number; expires?: number; subject?: string },
) {
  const minted = await clientFor(o).createUploadToken({
    ...(o.expires !== undefined ? { expiresInSeconds: o.expires } : {}),
    ...(o.maxBytes !== undefined ? { maxBytes: o.maxBytes } : {}),
    ...(o.types ? { allowedTypes: o.types } : {}),
    ...(o.maxUploads !== undefined ? { maxUploads: o.maxUploads } : {}),
    ...(o.subject ? { subject: o.subject } : {}),
  });
  if (o.json) return void console.log(JSON.stringify(minted));
  // The token alone on stdout (for $(oncely token create …)); what it allows on stderr.
  console.log(minted.token);
  console.error(`oncely: upload token ${minted.id}, valid until ${minted.expiresAt}`);
}

export async function revokeTokenCommand(id: string, o: ServerOptions) {
  await clientFor(o).revokeUploadToken(id);
  if (!o.json) console.error(`oncely: upload token ${id} revoked`);
}
