// Scenario "resumable": a large file through tus (PATCHes of 8 MiB, the connection cut
// mid-PATCH three times, each time resumed from the server's offset after a HEAD) versus
// the same bytes in one POST /v1/uploads, in the same run. Reports MiB/s of both, their
// ratio, the bytes sent again after the cuts, and each API process's peak RSS.
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

async function tusUpload(url: string, apiKey: string, bytes: number, cutsAt: number[]): Promise<{ resent: number }> {
  const auth = { authorization: `Bearer ${apiKey}`, 'tus-resumable': '1.0.0' };
  const created = await request(`${url}/v1/tus`, 'POST', {
    ...auth,
    'idempotency-key': `bench-tus-${randomUUID()}`,
    'upload-length': String(bytes),
  });
  if (created === 'cut' || created.status !== 201) throw new Error(`tus creation failed: ${JSON.stringify(created)}`);
  const location = `${url}${created.headers.location}`;
  let offset = 0;
  let sent = 0;
  const cuts = [...cutsAt];
  while (offset < bytes) {
    const piece = slice(offset, Math.min(CHUNK, bytes - offset));
    const cut = cuts.length > 0 && offset >= cuts[0]! ? Math.floor(piece.length / 2) : undefined;
    if (cut !== undefined) cuts.shift();
    const res = await request(
      location,
      'PATCH',
      { ...auth, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) },
      piece,
      cut,
    );
    sent += cut ?? piece.length;
    if (res !== 'cut' && res.status === 204) {
      offset = Number(res.headers['upload-offset']);
      continue;
    }
    // Cut (or 423 while the server still finishes the cut PATCH): ask where it stands.
    await new Promise((r) => setTimeout(r, 100));
    const head = await request(location, 'HEAD', auth);
    if (head === 'cut' || head.status !== 200) throw new Error(`HEAD failed: ${JSON.stringify(head)}`);
    offset = Number(head.headers['upload-offset']);
  }
  return { resent: sent - bytes };
}

export async function resumableUpload(services: BenchServices, opts: { bytes: number; rounds: number }) {
  const worker = await startOncelyProcess(services, 'worker');
  const sha = expectedSha(opts.bytes);
  const tusMiBs: number[] = [];
  const oneMiBs: number[] = [];
  let resent = 0;
  let tusPeak = 0;
  let onePeak = 0;
  let idlePeak = 0;
  const cpu: Record<string, number>[] = [];
  try {
    for (let round = 0; round < opts.rounds; round++) {
      // Each mode on an API process of its own, so each peak RSS is its own.
      const tusApi = await startOncelyProcess(services, 'api');
      // What the process peaked at while starting, before any upload: the floor under both.
      idlePeak = Math.max(idlePeak, await peakRssMiB(tusApi.proc.child.pid!));
      let t = performance.now();
      let r = { resent: 0 };
      cpu.push(
        await measureCpu({ api: tusApi.proc.child.pid, worker: worker.proc.child.pid, ...services.pids }, async () => {
          r = await tusUpload(
            tusApi.url,
            services.apiKey,
            opts.bytes,
            [0.25, 0.5, 0.75].map((f) => Math.floor((opts.bytes * f) / CHUNK) * CHUNK),
          );
          return 1;
        }),
      );
      tusMiBs.push(opts.bytes / MiB / ((performance.now() - t) / 1000));
      resent = r.resent;
      tusPeak = Math.max(tusPeak, await peakRssMiB(tusApi.proc.child.pid!));
      await tusApi.proc.stop();

      const oneApi = await startOncelyProcess(services, 'api');
      t = performance.now();
      const res = await postLarge(oneApi.url, services.apiKey, opts.bytes);
      if (res.status !== 201 || res.json.sha256 !== sha) throw new Error(`one-request upload failed: ${res.status}`);
      oneMiBs.push(opts.bytes / MiB / ((performance.now() - t) / 1000));
      onePeak = Math.max(onePeak, await peakRssMiB(oneApi.proc.child.pid!));
      await oneApi.proc.stop();
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    return {
      scenario: `resumable (tus, ${CHUNK / MiB} MiB PATCHes, 3 cuts)`,
      bytes: opts.bytes,
      rounds: opts.rounds,
      tusMiBps: Math.round(median(tusMiBs) * 10) / 10,
      oneRequestMiBps: Math.round(median(oneMiBs) * 10) / 10,
      apiStartupPeakRssMiB: Math.round(idlePeak * 10) / 10,
      // CPU per tus upload of `bytes` (ms), per component.
      tusCpuMsPerUpload: JSON.stringify(medianCpu(cpu)),
      ratio: Math.round((median(tusMiBs) / median(oneMiBs)) * 100) / 100,
      bytesResent: resent,
      tusApiPeakRssMiB: Math.round(tusPeak * 10) / 10,
      oneRequestApiPeakRssMiB: Math.round(onePeak * 10) / 10,
    };
  } finally {
    await worker.proc.stop();
  }
}
