// `oncely upload <files...>`: uploads files exactly once each, with a progress bar per
// file. Every file's key lives in an outbox file before the first byte is sent, so a run
// that is interrupted (Ctrl-C, crash, kill) and started again resumes with the same key.
import os from 'node:os';
import path from 'node:path';
import { stat } from 'node:fs/promises';
import cliProgress from 'cli-progress';
import { FileOutbox, openFileBody, openFileRange, pendingFromFile, sha256File } from './node';
import { sendThroughOutbox } from './outbox-runner';
import { GaveUpError, UploadClient } from './upload-client';
import type { PendingUpload, UploadResult } from './types';

export interface UploadCommandOptions {
  server: string;
  token: string;
  wait: boolean;
  json: boolean;
  outbox: string;
  maxAttempts: number;
  contentType?: string;
  /** Files of at least this many bytes are sent resumably (tus), resuming after a kill. */
  resumableFrom: number;
}

/** `64MiB`, `500k`, `1G`, `1048576` → bytes (binary multiples); `10MB`, `1GB` are decimal ones. */
export function parseSize(value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(k|kib|kb|m|mib|mb|g|gib|gb)?\s*$/i.exec(value);
  if (!m) throw new Error(`not a size: ${value} (for example 64MiB)`);
  const units = { k: 1024, kib: 1024, kb: 1e3, m: 1024 ** 2, mib: 1024 ** 2, mb: 1e6, g: 1024 ** 3, gib: 1024 ** 3, gb: 1e9 };
  const unit = units[(m[2] ?? '').toLowerCase() as keyof typeof units] ?? 1;
  return Math.round(Number(m[1]) * unit);
}

/** `15m`, `1h`, `90s`, `900` (seconds) → seconds. */
export function parseDuration(value: string): number {
  const m = /^\s*(\d+)\s*(s|m|h|d)?\s*$/i.exec(value);
  if (!m) throw new Error(`not a duration: ${value} (for example 15m)`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[(m[2] ?? 's').toLowerCase() as 's'];
}

export const EXIT = { ok: 0, rejected: 1, usage: 2, gaveUp: 3, interrupted: 130 } as const;

export function defaultOutboxPath(): string {
  return path.join(process.env.XDG_STATE_HOME ?? path.join(os.homedir(), '.local', 'state'), 'oncely', 'outbox.json');
}

/** The pending upload for this file: the one left by an interrupted run, or a new one. */
async function pendingFor(outbox: FileOutbox, file: string, contentType?: string): Promise<PendingUpload> {
  const abs = path.resolve(file);
  const existing = (await outbox.list()).filter((p) => p.source === abs);
  if (existing.length) {
    const [size, sha] = await Promise.all([stat(abs).then((s) => s.size), sha256File(abs)]);
    const same = existing.find((p) => p.bytes === size && p.sha256 === sha);
    if (same) return same;
  }
  return pendingFromFile(abs, { contentType });
}

export async function runUpload(files: string[], opts: UploadCommandOptions): Promise<number> {
  const outbox = new FileOutbox(opts.outbox);
  const client = new UploadClient({
    baseUrl: opts.server.replace(/\/$/, ''),
    token: opts.token,
    openBody: openFileBody,
    openRange: openFileRange,
    resumableFromBytes: opts.resumableFrom,
    maxAttempts: opts.maxAttempts,
    attemptTimeoutMs: 10 * 60_000,
  });
  const controller = new AbortController();
  const onSigint = () => controller.abort(new Error('interrupted'));
  process.once('SIGINT', onSigint);
  const bars = opts.json
    ? undefined
    : new cliProgress.MultiBar(
        { stream: process.stderr, format: ' {bar} {percentage}% | {file} | {status}', hideCursor: true, clearOnComplete: false },
        cliProgress.Presets.shades_classic,
      );
  const results: Record<string, unknown>[] = [];
  let exit: number = EXIT.ok;
  try {
    for (const file of files) {
      const pending = await pendingFor(outbox, file, opts.contentType);
      const bar = bars?.create(Math.max(pending.bytes, 1), 0, {
        file: pending.fileName,
        status: pending.attempts ? `resuming (key ${pending.idempotencyKey})` : 'sending',
      });
      try {
        let result: UploadResult = await sendThroughOutbox(client, outbox, pending, {
          signal: controller.signal,
          onProgress: (sent) => bar?.update(sent),
          onAttempt: (n, outcome, delay) => bar?.update({ status: `attempt ${n}: ${outcome}; retry in ${(delay / 1000).toFixed(1)} s` }),
        });
        if (opts.wait && result.status === 201)
          result = { ...result, body: await waitProcessed(opts, result.body.uploadId, controller.signal) };
        const ok = result.status >= 200 && result.status < 300;
        if (!ok) exit = EXIT.rejected;
        bar?.update(pending.bytes, {
          status: ok
            ? `${result.status}${result.replayed ? ' (replayed)' : ''} ${result.body?.uploadId ?? ''}`
            : `${result.status} ${result.body?.error ?? ''}: ${result.body?.detail ?? ''}`,
        });
        results.push({
          file,
          idempotencyKey: pending.idempotencyKey,
          status: result.status,
          replayed: result.replayed,
          attempts: result.attempts,
          body: result.body,
        });
      } catch (err) {
        if (controller.signal.aborted) {
          exit = EXIT.interrupted;
          bar?.update({ status: 'interrupted: run again to resume with the same key' });
          break;
        }
        exit = err instanceof GaveUpError ? EXIT.gaveUp : EXIT.rejected;
        bar?.update({ status: `failed: ${(err as Error).message} (kept in the outbox)` });
        results.push({ file, idempotencyKey: pending.idempotencyKey, error: (err as Error).message });
      }
    }
  } finally {
    bars?.stop();
    process.off('SIGINT', onSigint);
  }
  if (opts.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  return exit;
}

async function waitProcessed(opts: UploadCommandOptions, uploadId: string, signal: AbortSignal): Promise<unknown> {
  for (;;) {
    const res = await fetch(`${opts.server.replace(/\/$/, '')}/v1/uploads/${uploadId}?wait=30`, {
      headers: { authorization: `Bearer ${opts.token}` },
      signal,
    });
    const body = (await res.json()) as { status?: string };
    if (!res.ok || body.status === 'processed') return body;
  }
}
