// The one intake every door calls: its checks, in the key rule's order, at its own level
// (a Hono app over app.request(), a recording receiver; no stack).
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { Intake, type Declared } from '../../src/arrivals/intake';
import type { Principal } from '../../src/credentials';
import type { AppEnv } from '../../src/http/env';
import { onError } from '../../src/api/problem-handler';
import type { UploadGrant } from '../../src/tokens/grant';
import { InFlightUploads } from '../../src/upload/in-flight';
import type { Arrival } from '../../src/upload/admission';
import type { DeclaredUpload } from '../../src/upload/types';

const grant = (over: Partial<UploadGrant> = {}): UploadGrant => ({
  tokenId: 'tok1',
  subject: 'user-7',
  metadata: null,
  maxBytes: null,
  allowedTypes: null,
  maxUploads: null,
  expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
  ...over,
});
const keyPrincipal: Principal = { kind: 'key', id: 'k1', label: 'ci', scopes: [] };
const tokenPrincipal = (g: UploadGrant): Principal => ({ kind: 'token', id: g.tokenId, scopes: [], grant: g });

const declared = (over: Partial<Declared> = {}): Declared => ({
  key: 'k-1',
  bytes: 10,
  contentType: 'image/png',
  fileName: 'a.png',
  sha256: null,
  ...over,
});

/** An app whose one route declares `d` and, when asked, admits it and takes a slot. */
function harness(opts: { maxBytes?: number; slots?: number } = {}) {
  const admitted: { upload: Parameters<Intake['admit']>[0]; arrival: Arrival }[] = [];
  const intake = new Intake({
    receiver: {
      admit: async (req, arrival) => {
        admitted.push({ upload: req as never, arrival });
      },
      release: async () => {},
    },
    inFlight: new InFlightUploads(opts.slots ?? 4),
    maxBytes: opts.maxBytes ?? 100,
  });
  let last: DeclaredUpload | undefined;
  const request = async (principal: Principal, d: Declared, then: 'declare' | 'admit' = 'admit') => {
    const app = new Hono<AppEnv>();
    app.use('*', async (c, next) => {
      c.set('tenantId', 't1');
      c.set('principal', principal);
      await next();
    });
    app.post('/', async (c) => {
      last = intake.declare(c, 'tus', d, { 'upload-limit': 'max-size=100' });
      if (then === 'admit') await intake.admit(last);
      return c.json(last);
    });
    app.onError(onError);
    const res = await app.request('/', { method: 'POST' });
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
  };
  return { intake, admitted, request, last: () => last };
}

describe('the intake', () => {
  it('declares the upload under its caller: tenant, mode, caller, the pipeline named', async () => {
    const h = harness();
    const r = await h.request(keyPrincipal, declared({ pipeline: 'thumbs' }));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      key: 'k-1',
      bytes: 10,
      contentType: 'image/png',
      fileName: 'a.png',
      sha256: null,
      pipeline: 'thumbs',
      tenantId: 't1',
      mode: 'tus',
      caller: { kind: 'key', id: 'k1', label: 'ci' },
    });
    expect(h.admitted).toEqual([
      {
        upload: { tenantId: 't1', idempotencyKey: 'k-1', pipeline: 'thumbs', fileName: 'a.png', contentType: 'image/png' },
        arrival: { mode: 'tus', caller: { kind: 'key', id: 'k1', label: 'ci' }, bytes: 10 },
      },
    ]);
  });

  it('refuses a file past the maximum first (413 with the maximum and the door’s own limit header), asking no one', async () => {
    const h = harness({ maxBytes: 100 });
    // Past the maximum and naming a pipeline the token forbids: the size answers.
    const r = await h.request(tokenPrincipal(grant({ pipeline: 'p1' })), declared({ bytes: 101, pipeline: 'p2' }));
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ error: 'payload_too_large', maxBytes: 100, detail: 'The file is 101 bytes; the maximum is 100 bytes.' });
    expect(r.headers.get('upload-limit')).toBe('max-size=100');
    expect(h.admitted).toEqual([]);
    // Exactly the maximum is allowed.
    expect((await h.request(keyPrincipal, declared({ bytes: 100 }))).status).toBe(200);
  });

  it('applies a token’s pipeline: naming another is 403, naming none is naming the token’s, "default" is the tenant’s default', async () => {
    const h = harness();
    const pinned = tokenPrincipal(grant({ pipeline: 'p1' }));
    const other = await h.request(pinned, declared({ pipeline: 'p2' }), 'declare');
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ error: 'pipeline_not_allowed', pipeline: 'p1' });
    expect((await h.request(pinned, declared(), 'declare')).body.pipeline).toBe('p1');
    const byDefault = await h.request(tokenPrincipal(grant({ pipeline: 'default' })), declared(), 'declare');
    expect(byDefault.status).toBe(200);
    expect(byDefault.body).not.toHaveProperty('pipeline');
  });

  it('admits a new upload in order: the token is live (401), then its declared size (413) and type (415), then the pipeline', async () => {
    const h = harness();
    const expired = grant({ expiresAt: new Date(Date.now() - 1000).toISOString(), maxBytes: 1, allowedTypes: ['text/plain'] });
    const late = await h.request(tokenPrincipal(expired), declared());
    expect(late.status).toBe(401);
    expect(late.body.error).toBe('unauthorized');

    const small = await h.request(tokenPrincipal(grant({ maxBytes: 5, allowedTypes: ['text/plain'] })), declared({ bytes: 6 }));
    expect(small.status).toBe(413);
    expect(small.body.detail).toBe('The upload token allows at most 5 bytes; this upload declares 6.');

    const typed = await h.request(tokenPrincipal(grant({ allowedTypes: ['image/*'] })), declared({ contentType: 'text/plain' }));
    expect(typed.status).toBe(415);
    expect(typed.body.error).toBe('type_not_allowed');
    expect(h.admitted).toEqual([]);

    // A length not known before the bytes (a form post, Uppy) is told to the hook as null.
    const ok = await h.request(tokenPrincipal(grant({ allowedTypes: ['image/*'] })), declared({ bytes: undefined }));
    expect(ok.status).toBe(200);
    expect(h.admitted).toHaveLength(1);
    expect(h.admitted[0]!.arrival).toEqual({ mode: 'tus', caller: { kind: 'token', id: 'tok1', subject: 'user-7' }, bytes: null });
  });

  it('gives each tenant at most its in-flight slots (429), freed by their release', async () => {
    const { intake } = harness({ slots: 2 });
    const a = intake.slot('t1');
    intake.slot('t1');
    expect(() => intake.slot('t1')).toThrow(expect.objectContaining({ code: 'too_many_uploads', status: 429 }));
    expect(() => intake.slot('t2')).not.toThrow();
    a();
    a(); // a second release frees nothing more
    expect(() => intake.slot('t1')).not.toThrow();
    expect(() => intake.slot('t1')).toThrow(expect.objectContaining({ code: 'too_many_uploads' }));
  });
});
