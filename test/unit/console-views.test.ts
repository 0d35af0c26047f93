// The console's pages as strings: everything a tenant controls is escaped, write buttons follow
// the key's scopes, and every action form carries the session's CSRF token and its own once-key.
import { describe, expect, it } from 'vitest';
import { SCOPES, type Scope } from '../../src/credentials';
import type { ConsoleCaller } from '../../src/console/sessions';
import { uploadPage, type UploadDetail } from '../../src/console/views/upload';
import { uploadsPage, sparkline } from '../../src/console/views/uploads';
import { bytes } from '../../src/console/views/kit';
import { eventPage, eventsPage } from '../../src/console/views/events';

function caller(scopes: readonly Scope[] = SCOPES): ConsoleCaller {
  const now = new Date();
  return {
    kind: 'tenant',
    session: {
      id: '00000000-0000-4000-8000-000000000001',
      tenant_id: '00000000-0000-4000-8000-000000000002',
      api_key_id: '00000000-0000-4000-8000-000000000003',
      csrf_token: 'csrf-token-of-the-session',
      user_agent: null,
      created_at: now,
      last_seen_at: now,
      expires_at: new Date(now.getTime() + 3600_000),
      revoked_at: null,
    },
    credential: {
      tenantId: '00000000-0000-4000-8000-000000000002',
      principal: { kind: 'key', id: '00000000-0000-4000-8000-000000000003', label: 'ops', scopes },
    },
  };
}

const HOSTILE = '<img src=x onerror=alert(1)>"\'.png';

const upload: UploadDetail = {
  uploadId: '11111111-1111-4111-8111-111111111111',
  status: 'committed',
  idempotencyKey: '<script>k</script>',
  fileName: HOSTILE,
  contentType: 'image/png',
  bytes: 2048,
  sha256: 'a'.repeat(64),
  storageKey: 's',
  createdAt: '2026-12-06T10:00:00.000Z',
  deletedAt: null,
  erasedAt: null,
  expiresAt: null,
  tokenId: null,
  subject: null,
  metadata: { note: '</pre><script>x</script>' },
  processing: { status: 'processed', reason: null, processedAt: '2026-12-06T10:00:01.000Z' },
  pipeline: {
    name: 'gallery',
    version: 2,
    steps: [{ index: 0, type: 'image.variants', status: 'passed', reason: null, finishedAt: '2026-12-06T10:00:01.000Z' }],
  },
  renditions: [],
};

const event = {
  id: 'evt_1_processed',
  type: 'upload.processed',
  uploadId: upload.uploadId,
  createdAt: '2026-12-06T10:00:01.000Z',
  deliveries: [
    { endpointId: '22222222-2222-4222-8222-222222222222', attempts: 2, lastStatus: 500, lastError: '<b>boom</b>', deliveredAt: null },
  ],
  attempts: [],
};

const render = async (f: unknown) => String(await f);

describe('console pages', () => {
  it('escape every value a tenant controls (file name, key, metadata, delivery errors)', async () => {
    const out = await render(uploadPage(caller(), { upload, events: [event] }));
    expect(out).not.toContain('<img src=x');
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<b>boom</b>');
    expect(out).toContain('&lt;img src=x onerror=alert(1)&gt;');
    const list = await render(
      uploadsPage(caller(), {
        items: [{ ...upload, processing: { status: 'processed' } }],
        nextCursor: null,
        filter: { name: '"><script>' },
        hourly: [],
      }),
    );
    expect(list).not.toContain('<script>');
    expect(list).not.toContain('<img src=x');
  });

  it('has no inline script or style attribute on any page (the CSP allows neither)', async () => {
    // Attribute values emptied first: escaped text inside them is not an attribute.
    const out = (await render(uploadPage(caller(), { upload, events: [event] }))).replace(/"[^"]*"/g, '""');
    expect(out).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(out).not.toMatch(/<[^>]*\son[a-z]+=/);
    expect(out).not.toMatch(/<[^>]*\sstyle=/);
  });

  it('draws write buttons only for the scopes the key holds, each with the CSRF token and a fresh once-key', async () => {
    const all = await render(uploadPage(caller(), { upload, events: [event] }));
    expect(all).toContain('/console/uploads/11111111-1111-4111-8111-111111111111/delete');
    expect(all).toContain('/console/uploads/11111111-1111-4111-8111-111111111111/reprocess');
    expect(all).toContain('/console/events/evt_1_processed/redeliver');
    expect(all).toContain('/console/uploads/11111111-1111-4111-8111-111111111111/hold');
    const forms = [...all.matchAll(/<form method="post" action="\/console\/(uploads|events)[^"]*"[\s\S]*?<\/form>/g)].map((m) => m[0]);
    expect(forms.length).toBe(4);
    const onces = forms.map((f) => /name="once" value="([0-9a-f-]{36})"/.exec(f)?.[1]);
    expect(new Set(onces).size).toBe(4);
    for (const f of forms) expect(f).toContain('name="csrf" value="csrf-token-of-the-session"');

    const reader = await render(uploadPage(caller(['uploads:read']), { upload, events: [event] }));
    expect(reader).not.toContain('/delete"');
    expect(reader).not.toContain('/reprocess"');
    expect(reader).not.toContain('/redeliver"');
    expect(reader).not.toContain('/hold"');
    // A held upload offers its release, and no Delete.
    const held = await render(
      uploadPage(caller(), { upload: { ...upload, legalHold: { reason: 'Matter <7>', placedAt: null, placedBy: 'key:k' } }, events: [] }),
    );
    expect(held).toContain('/release"');
    expect(held).not.toContain('/delete"');
    expect(held).toContain('Matter &lt;7&gt;');
  });

  it('formats sizes and draws the hourly sparkline with its total for screen readers', async () => {
    expect(bytes(512)).toBe('512 B');
    expect(bytes(2048)).toBe('2.0 KiB');
    expect(bytes(5 * 1024 * 1024 * 1024)).toBe('5.0 GiB');
    const svg = await render(sparkline([0, 1, 3, 0]));
    expect(svg).toContain('aria-label="4 uploads in the last 24 hours, at most 3 in one hour"');
    expect((/points="([^"]+)"/.exec(svg)?.[1] ?? '').split(' ')).toHaveLength(4);
  });

  it("shows an event that is not an upload's (a storage migration's end) without an upload link", async () => {
    const ended = {
      id: 'evt_2_completed',
      type: 'storage_migration.completed',
      uploadId: null,
      createdAt: '2026-12-06T10:00:02.000Z',
      payload: { data: { migrationId: '33333333-3333-4333-8333-333333333333<b>' } },
      deliveries: [],
      attempts: [],
    };
    const one = await render(eventPage(caller(), { event: ended }));
    expect(one).toContain('Of storage migration <code>33333333-3333-4333-8333-333333333333&lt;b&gt;</code>');
    expect(one).not.toContain('/console/uploads/');
    const list = await render(eventsPage(caller(), { failed: [], items: [ended, event], nextCursor: null, endpoints: [] }));
    expect(list).toContain('/console/events/evt_2_completed');
    expect(list.match(/\/console\/uploads\//g)).toHaveLength(1);
  });
});
