// The upload page served at `/`: pick files, watch progress and status. Pending uploads
// live in IndexedDB with their bytes, so a reload or a lost connection resumes them with
// the same Idempotency-Key: drained on load, when the browser comes back online, and on a
// timer.
import { IndexedDbOutbox, pendingFromBrowserFile, xhrFetch } from '../client/browser';
import { sendThroughOutbox } from '../client/outbox-runner';
import type { PendingUpload } from '../client/types';
import { UploadClient } from '../client/upload-client';

const outbox = new IndexedDbOutbox();
const list = document.querySelector<HTMLUListElement>('#uploads')!;
const tokenInput = document.querySelector<HTMLInputElement>('#token')!;
const inFlight = new Set<string>();
const rows = new Map<string, { progress: HTMLProgressElement; status: HTMLElement }>();

tokenInput.value = localStorage.getItem('oncely-token') ?? '';
tokenInput.addEventListener('change', () => {
  localStorage.setItem('oncely-token', tokenInput.value.trim());
  void drain();
});

function row(p: PendingUpload) {
  let r = rows.get(p.id);
  if (!r) {
    const li = document.createElement('li');
    li.dataset.id = p.id;
    li.dataset.key = p.idempotencyKey;
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = p.fileName ?? '(file)';
    const progress = document.createElement('progress');
    progress.max = Math.max(p.bytes, 1);
    progress.value = 0;
    const status = document.createElement('span');
    status.className = 'status';
    status.textContent = 'pending';
    li.append(name, progress, status);
    list.append(li);
    r = { progress, status };
    rows.set(p.id, r);
  }
  return r;
}

function client(p: PendingUpload) {
  const r = row(p);
  return new UploadClient({
    baseUrl: location.origin,
    token: tokenInput.value.trim(),
    fetch: xhrFetch((url, loaded) => {
      if (url.endsWith('/v1/uploads')) r.progress.value = loaded;
    }),
    openBody: async (pending) => (await outbox.file(pending.id))!,
    maxAttempts: 8,
  });
}

async function send(p: PendingUpload): Promise<void> {
  if (inFlight.has(p.id) || !tokenInput.value.trim()) return;
  inFlight.add(p.id);
  const r = row(p);
  r.status.textContent = p.attempts ? `resuming (attempt ${p.attempts + 1})` : 'sending';
  try {
    const result = await sendThroughOutbox(client(p), outbox, p, {
      onAttempt: (n, outcome, delay) =>
        (r.status.textContent = `attempt ${n} failed (${outcome}); retrying in ${Math.round(delay / 1000)} s`),
    });
    r.progress.value = r.progress.max;
    r.status.textContent =
      result.status === 201
        ? `done: ${result.body.uploadId}`
        : `rejected ${result.status}: ${result.body?.detail ?? result.body?.error ?? ''}`;
    r.status.dataset.state = result.status === 201 ? 'done' : 'rejected';
    r.status.dataset.uploadId = result.body?.uploadId ?? '';
    remember(p, r.status.textContent);
  } catch (err) {
    r.status.textContent = `waiting to retry: ${(err as Error).message}`;
  } finally {
    inFlight.delete(p.id);
  }
}

/** Finished uploads stay listed across reloads (the outbox only holds unfinished ones). */
function remember(p: PendingUpload, text: string) {
  const done = JSON.parse(localStorage.getItem('oncely-done') ?? '[]') as { name: string; key: string; text: string }[];
  done.push({ name: p.fileName ?? '', key: p.idempotencyKey, text });
  localStorage.setItem('oncely-done', JSON.stringify(done.slice(-50)));
}

async function drain(): Promise<void> {
  for (const p of await outbox.list()) void send(p);
}

document.querySelector<HTMLInputElement>('#files')!.addEventListener('change', async (e) => {
  const input = e.target as HTMLInputElement;
  for (const file of Array.from(input.files ?? [])) {
    const p = await pendingFromBrowserFile(file);
    await outbox.put(p, file); // persisted before the first byte is sent
    row(p).status.textContent = 'queued';
    void send(p);
  }
  input.value = '';
});

for (const d of JSON.parse(localStorage.getItem('oncely-done') ?? '[]') as { name: string; key: string; text: string }[]) {
  const li = document.createElement('li');
  li.className = 'finished';
  li.dataset.key = d.key;
  li.textContent = `${d.name} — ${d.text}`;
  document.querySelector('#finished')!.append(li);
}
for (const p of await outbox.list()) row(p);
window.addEventListener('online', () => void drain());
setInterval(() => void drain(), 15_000);
void drain();
