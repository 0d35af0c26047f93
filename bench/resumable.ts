// Scenario "resumable": a large file through tus and through the IETF resumable-upload
// draft (appends of 8 MiB, the connection cut mid-append three times, each time resumed from
// the server's offset after a HEAD) versus the same bytes in one POST /v1/uploads, in the
// same run; and tus as tus-js-client sends by default (no chunkSize: the whole rest of the
// file in one PATCH, cut three times). Reports MiB/s of each, the ratios, how long the store
// took to assemble the parts (the API's oncely_resumable_assemble_seconds), the bytes sent
// again after the cuts, CPU per upload and each API process's peak RSS.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { BenchServices } from './lib/services';
import { peakRssMiB, startOncelyProcess } from './lib/services';
import { measureCpu, medianCpu } from './lib/cpu';
import { expectedSha, postLarge } from './large-upload';

const MiB = 1024 * 1024;
/** Bytes per PATCH (8 MiB as the issue asks; BENCH_TUS_PATCH_MIB to compare others). */
const CHUNK = Number(process.env.BENCH_TUS_PATCH_MIB ?? 8) * MiB;

/** Bytes [start, start + length) of the deterministic body (byte i = (i mod 1 MiB) * 31 + 7). */
const BLOCK = Buffer.from(Array.from({ length: MiB }, (_, i) => (i * 31 + 7) & 0xff));
function slice(start: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  for (let done = 0; done < length;)
    done += BLOCK.copy(out, done, (start + done) % MiB, Math.min(MiB, ((start + done) % MiB) + length - done));
  return out;
}

function request(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: Buffer,
  cutAfter?: number,
): Promise<{ status: number; headers: http.IncomingHttpHeaders } | 'cut'> {
  return new Promise((resolve) => {
    const req = http.request(url, {
      method,
      headers: body ? { ...headers, 'content-length': String(body.length) } : headers,
      agent: false,
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    // A connection that breaks (our cut, or the server refusing early with connection: close
    // while the body is still going out) is a cut: the caller asks where the upload stands.
    req.on('error', () => resolve('cut'));
    if (!body) return void req.end();
    if (cutAfter === undefined) return void req.end(body);
    // A dropped link: part of the body goes out, then the connection dies.
    req.write(body.subarray(0, cutAfter), () => setTimeout(() => req.destroy(), 50));
  });
}

/** What differs between tus and the IETF draft for this loop: the creation, an append's headers, HEAD. */
interface AppendProtocol {
  creation: { path: string; headers: Record<string, string> };
  append: (offset: number, last: boolean) => Record<string, string>;
  /** An append's answer that moved the offset (the last one of the draft is the upload's 201). */
  appended: (status: number) => boolean;
  head: Record<string, string>;
}

const TUS: AppendProtocol = {
  creation: { path: '/v1/tus', headers: { 'tus-resumable': '1.0.0' } },
  append: (offset) => ({ 'tus-resumable': '1.0.0', 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) }),
  appended: (status) => status === 204,
  head: { 'tus-resumable': '1.0.0' },
};

const DRAFT_VERSION = { 'upload-draft-interop-version': '8' };
const RUFH: AppendProtocol = {
  creation: { path: '/v1/uploads', headers: { ...DRAFT_VERSION, 'upload-complete': '?0', 'content-length': '0' } },
  append: (offset, last) => ({
    ...DRAFT_VERSION,
    'content-type': 'application/partial-upload',
    'upload-offset': String(offset),
    'upload-complete': last ? '?1' : '?0',
  }),
  appended: (status) => status === 204 || status === 201,
  head: DRAFT_VERSION,
};

async function appendUpload(
  p: AppendProtocol,
  url: string,
  apiKey: string,
  bytes: number,
  chunk: number,
  cutsAt: number[],
): Promise<{ resent: number }> {
  const auth = { authorization: `Bearer ${apiKey}` };
  const created = await request(`${url}${p.creation.path}`, 'POST', {
    ...auth,
    ...p.creation.headers,
    'idempotency-key': `bench-resumable-${randomUUID()}`,
    'upload-length': String(bytes),
  });
  if (created === 'cut' || created.status !== 201) throw new Error(`creation failed: ${JSON.stringify(created)}`);
  const location = new URL(created.headers.location!, url).toString();
  let offset = 0;
  let sent = 0;
  const cuts = [...cutsAt];
  while (offset < bytes) {
    const piece = slice(offset, Math.min(chunk, bytes - offset));
    const cut = cuts.length > 0 && offset >= cuts[0]! ? Math.floor(piece.length / 2) : undefined;
    if (cut !== undefined) cuts.shift();
    const res = await request(location, 'PATCH', { ...auth, ...p.append(offset, offset + piece.length === bytes) }, piece, cut);
    sent += cut ?? piece.length;
    if (res !== 'cut' && p.appended(res.status)) {
      offset = Number(res.headers['upload-offset']);
      continue;
    }
    // Cut (or 423 while the server still finishes the cut PATCH): ask where it stands.
    await new Promise((r) => setTimeout(r, 100));
    const head = await request(location, 'HEAD', { ...auth, ...p.head });
    if (head === 'cut' || head.status >= 300) throw new Error(`HEAD failed: ${JSON.stringify(head)}`);
    offset = Number(head.headers['upload-offset']);
  }
  return { resent: sent - bytes };
}

/** One resumable upload of `bytes` in appends of `chunk` with 3 cuts on an API process of its own: MiB/s, CPU, bytes re-sent, peak RSS. */
async function measureAppends(
  services: BenchServices,
  worker: { proc: { child: { pid?: number } } },
  p: AppendProtocol,
  bytes: number,
  chunk = CHUNK,
) {
  const api = await startOncelyProcess(services, 'api');
  // What the process peaked at while starting, before any upload: the floor under it.
  const startupPeak = await peakRssMiB(api.proc.child.pid!);
  const t = performance.now();
  let r = { resent: 0 };
  const cpu = await measureCpu({ api: api.proc.child.pid, worker: worker.proc.child.pid, ...services.pids }, async () => {
    // Cuts in the appends at a quarter, half and three quarters (one PATCH: at a half, three quarters, seven eighths).
    r = await appendUpload(
      p,
      api.url,
      services.apiKey,
      bytes,
      chunk,
      [0.25, 0.5, 0.75].map((f) => Math.floor((bytes * f) / chunk) * chunk),
    );
    return 1;
  });
  const mibps = bytes / MiB / ((performance.now() - t) / 1000);
  const peak = await peakRssMiB(api.proc.child.pid!);
  const assembleMs = await assembleSeconds(api.url).then((s) => s * 1000);
  await api.proc.stop();
  return { mibps, cpu, resent: r.resent, assembleMs, peak, startupPeak };
}

/** What this API process spent waiting for the store to assemble resumable uploads (s). */
async function assembleSeconds(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(/^oncely_resumable_assemble_seconds_sum\{[^}]*\} (\S+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

export async function resumableUpload(services: BenchServices, opts: { bytes: number; rounds: number }) {
  const worker = await startOncelyProcess(services, 'worker');
  const sha = expectedSha(opts.bytes);
  type Run = Awaited<ReturnType<typeof measureAppends>>;
  const runs = { tus: [] as Run[], rufh: [] as Run[], tusWhole: [] as Run[] };
  const oneMiBs: number[] = [];
  const oneCpu: Awaited<ReturnType<typeof measureCpu>>[] = [];
  let onePeak = 0;
  try {
    for (let round = 0; round < opts.rounds; round++) {
      // Each mode on an API process of its own, so each peak RSS is its own; alternating.
      runs.tus.push(await measureAppends(services, worker, TUS, opts.bytes));
      runs.rufh.push(await measureAppends(services, worker, RUFH, opts.bytes));
      runs.tusWhole.push(await measureAppends(services, worker, TUS, opts.bytes, opts.bytes));
      const oneApi = await startOncelyProcess(services, 'api');
      const t = performance.now();
      let res: Awaited<ReturnType<typeof postLarge>> | undefined;
      oneCpu.push(
        await measureCpu({ api: oneApi.proc.child.pid, worker: worker.proc.child.pid, ...services.pids }, async () => {
          res = await postLarge(oneApi.url, services.apiKey, opts.bytes);
          return 1;
        }),
      );
      if (res!.status !== 201 || res!.json.sha256 !== sha) throw new Error(`one-request upload failed: ${res!.status}`);
      oneMiBs.push(opts.bytes / MiB / ((performance.now() - t) / 1000));
      onePeak = Math.max(onePeak, await peakRssMiB(oneApi.proc.child.pid!));
      await oneApi.proc.stop();
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const round1 = (x: number) => Math.round(x * 10) / 10;
    const tus = median(runs.tus.map((r) => r.mibps));
    const rufh = median(runs.rufh.map((r) => r.mibps));
    const one = median(oneMiBs);
    return {
      scenario: `resumable (tus and the IETF draft, ${CHUNK / MiB} MiB appends, 3 cuts)`,
      bytes: opts.bytes,
      rounds: opts.rounds,
      tusMiBps: round1(tus),
      rufhMiBps: round1(rufh),
      oneRequestMiBps: round1(one),
      // tus-js-client's default: the rest of the file in one PATCH per connection.
      tusOnePatchMiBps: round1(median(runs.tusWhole.map((r) => r.mibps))),
      tusOnePatchRatio: Math.round((median(runs.tusWhole.map((r) => r.mibps)) / one) * 100) / 100,
      // The store assembling the parts at the end (CompleteMultipartUpload), inside the upload's time.
      tusAssembleMs: Math.round(median(runs.tus.map((r) => r.assembleMs))),
      tusOnePatchAssembleMs: Math.round(median(runs.tusWhole.map((r) => r.assembleMs))),
      apiStartupPeakRssMiB: round1(Math.max(...runs.tus.map((r) => r.startupPeak), ...runs.rufh.map((r) => r.startupPeak))),
      // CPU per upload of `bytes` (ms), per component.
      tusCpuMsPerUpload: JSON.stringify(medianCpu(runs.tus.map((r) => r.cpu))),
      rufhCpuMsPerUpload: JSON.stringify(medianCpu(runs.rufh.map((r) => r.cpu))),
      oneRequestCpuMsPerUpload: JSON.stringify(medianCpu(oneCpu)),
      // The API's CPU for the same bytes, tus over one request (#25's target: within 1.5×).
      tusApiCpuVsOneRequest:
        Math.round((median(runs.tus.map((r) => r.cpu.api)) / Math.max(1, median(oneCpu.map((c) => c.api)))) * 100) / 100,
      ratio: Math.round((tus / one) * 100) / 100,
      rufhVsTus: Math.round((rufh / tus) * 100) / 100,
      bytesResent: runs.tus.at(-1)!.resent,
      rufhBytesResent: runs.rufh.at(-1)!.resent,
      tusApiPeakRssMiB: round1(Math.max(...runs.tus.map((r) => r.peak))),
      rufhApiPeakRssMiB: round1(Math.max(...runs.rufh.map((r) => r.peak))),
      oneRequestApiPeakRssMiB: round1(onePeak),
    };
  } finally {
    await worker.proc.stop();
  }
}
