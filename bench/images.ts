// Images on request, against the same stack: a cold variant's latency through Oncely (the
// GET, the render run, the store) vs the same sharp call on the same bytes in a plain loop
// here; warm variants served vs `GET …/content` of an object of the variant's size; and a
// herd of 100 first requests for one cold variant (the runs it made, and its p99).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import sharp from 'sharp';

import { httpLoad } from './lib/load';
import { startOncelyProcess, type BenchServices } from './lib/services';
import { median, quantile } from './lib/stats';
import { imageWorkflowIds } from '../src/images/contract';

/** A 12-megapixel picture with a photo's detail (blurred noise), as a phone takes it. */
async function photo(): Promise<Buffer> {
  const noise = await sharp({
    create: { width: 1000, height: 750, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } },
  })
    .png()
    .toBuffer();
  return sharp(noise).resize(4000, 3000).blur(2).jpeg({ quality: 85 }).toBuffer();
}

export async function imageVariants(services: BenchServices, opts: { rounds: number; seconds: number; connections: number }) {
  const db = new pg.Client({ connectionString: services.databaseUrl });
  await db.connect();
  await db.query(`UPDATE tenants SET image_specs = 'any' WHERE id = $1`, [services.tenantId]);
  await db.end();
  const oncely = await startOncelyProcess(services, 'all');
  const connection = await Connection.connect({ address: services.temporalAddress });
  const temporal = new Client({ connection });
  const auth = { authorization: `Bearer ${services.apiKey}` };
  const post = async (body: Buffer, contentType: string) => {
    const res = await fetch(`${oncely.url}/v1/uploads`, {
      method: 'POST',
      headers: { ...auth, 'idempotency-key': `bench-img-${randomUUID()}`, 'content-type': contentType },
      body,
    });
    if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { uploadId: string }).uploadId;
  };
  const get = async (path: string) => {
    const t = performance.now();
    const res = await fetch(`${oncely.url}${path}`, { headers: auth });
    const body = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${body.toString().slice(0, 200)}`);
    return { ms: performance.now() - t, body };
  };
  try {
    const source = await photo();
    const id = await post(source, 'image/jpeg');
    // Cold: each round a width not asked before; the plain loop renders the same spec from the same bytes.
    const oncelyMs: number[] = [];
    const sharpMs: number[] = [];
    const spans: RenderSpans[] = [];
    for (let round = 0; round < Math.max(3, opts.rounds); round++) {
      const width = 800 + round;
      const cold = await get(`/v1/uploads/${id}/images/w_${width},h_600,fit_cover,f_webp`);
      oncelyMs.push(cold.ms);
      spans.push(await renderSpans(temporal, imageWorkflowIds.imageVariant(id, `w_${width},h_600,fit_cover,f_webp,q_80`), cold.ms));
      const t = performance.now();
      await sharp(source, { failOn: 'error' })
        .rotate()
        .resize({ width, height: 600, fit: 'cover', withoutEnlargement: true })
        .webp({ quality: 80 })
        .toBuffer();
      sharpMs.push(performance.now() - t);
    }
    // Warm: one stored variant, served again and again, vs an upload of the same size.
    const warmPath = `/v1/uploads/${id}/images/w_800,h_600,fit_cover,f_webp`;
    const variantBytes = (await get(warmPath)).body.length;
    const twin = await post(randomBytes(variantBytes), 'application/octet-stream');
    const warm: number[] = [];
    const content: number[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      const load = (path: string) =>
        httpLoad({ url: `${oncely.url}${path}`, headers: auth, connections: opts.connections, duration: opts.seconds });
      warm.push((await load(warmPath)).rps);
      content.push((await load(`/v1/uploads/${twin}/content`)).rps);
    }
    // The herd: 100 first requests for one cold variant at once.
    const herdSpec = 'w_640,fit_inside,f_webp,q_80';
    const herd = await Promise.all(Array.from({ length: 100 }, () => get(`/v1/uploads/${id}/images/w_640,f_webp`)));
    if (new Set(herd.map((h) => createHash('sha256').update(h.body).digest('hex'))).size !== 1)
      throw new Error('the herd got different bytes');
    let runs = 0;
    for await (const _ of temporal.workflow.list({ query: `WorkflowId = '${imageWorkflowIds.imageVariant(id, herdSpec)}'` })) runs++;
    return {
      scenario: 'image variants (12 MP JPEG source → 800×600 WebP)',
      rounds: opts.rounds,
      coldOncelyMs: Math.round(median(oncelyMs)),
      coldSharpMs: Math.round(median(sharpMs)),
      // Target: at most 1.2× the plain sharp call.
      coldRatio: round2(median(oncelyMs) / median(sharpMs)),
      // Where a cold request's time went (medians, from the render run's history): the
      // activity (the render with its reads and writes), Temporal's path around it, the rest.
      coldActivityMs: Math.round(median(spans.map((x) => x.activityMs))),
      coldTemporalMs: Math.round(median(spans.map((x) => x.temporalMs))),
      coldApiMs: Math.round(median(spans.map((x) => x.apiMs))),
      variantBytes,
      warmRps: Math.round(median(warm)),
      contentRps: Math.round(median(content)),
      // Target: at least 0.9× serving an upload of the same size.
      warmRatio: round2(median(warm) / median(content)),
      herdRequests: herd.length,
      herdRenders: runs,
      herdP99Ms: Math.round(
        quantile(
          herd.map((h) => h.ms),
          0.99,
        ),
      ),
    };
  } finally {
    await connection.close();
    await oncely.proc.stop();
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100;

interface RenderSpans {
  /** The render activity from its start to its completion (source read, sharp, variant stored, row). */
  activityMs: number;
  /** The run from its start to its completion, less the activity: start, tasks, dispatch. */
  temporalMs: number;
  /** The request less the run: the API's lookups and start call, the result's return, the variant read back. */
  apiMs: number;
}

/** A cold request split by its render run's history (event times). */
async function renderSpans(temporal: Client, workflowId: string, requestMs: number): Promise<RenderSpans> {
  const events = (await temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const at = (pick: (e: (typeof events)[number]) => unknown, last = false) => {
    const found = last ? events.findLast((e) => pick(e)) : events.find((e) => pick(e));
    const t = found?.eventTime;
    if (!t) throw new Error(`${workflowId}: an event is missing from its history`);
    return Number(t.seconds) * 1000 + (t.nanos ?? 0) / 1e6;
  };
  const runMs = at((e) => e.workflowExecutionCompletedEventAttributes) - at((e) => e.workflowExecutionStartedEventAttributes);
  const activityMs = at((e) => e.activityTaskCompletedEventAttributes, true) - at((e) => e.activityTaskStartedEventAttributes, true);
  return { activityMs, temporalMs: runMs - activityMs, apiMs: requestMs - runMs };
}
