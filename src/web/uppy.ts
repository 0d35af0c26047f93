// The upload pages: an Uppy Dashboard sending over tus to /v1/tus (`/`), or straight to
// the object store with @uppy/aws-s3 through Oncely's companion routes (`/direct`; the
// body's data-uploader says which). Each file gets its Idempotency-Key once, when it is
// added; Golden Retriever keeps files, their metadata (the key with them) and progress
// across reloads. Committed uploads are listed with their thumbnail once processed; below,
// the tenant's stored uploads (GET /v1/uploads) with a download link (a signed download URL)
// and a delete button (DELETE, erased within the wait).
import Uppy, { type Meta, type UppyFile } from '@uppy/core';
import Dashboard from '@uppy/dashboard';
import GoldenRetriever from '@uppy/golden-retriever';
import Tus from '@uppy/tus';
import AwsS3 from '@uppy/aws-s3';
import '@uppy/core/css/style.min.css';
import '@uppy/dashboard/css/style.min.css';

type FileMeta = Meta & { idempotencyKey?: string };

const tokenInput = document.querySelector<HTMLInputElement>('#token')!;
const done = document.querySelector<HTMLUListElement>('#done')!;
tokenInput.value = localStorage.getItem('oncely.token') ?? '';
tokenInput.addEventListener('change', () => localStorage.setItem('oncely.token', tokenInput.value.trim()));
const token = () => tokenInput.value.trim();

// Golden Retriever's service worker keeps large files' bytes across a reload.
const worker =
  'serviceWorker' in navigator
    ? await navigator.serviceWorker.register('/sw.js').then(
        () => navigator.serviceWorker.ready.then(() => true),
        () => false,
      )
    : false;

const direct = document.body.dataset.uploader === 's3';
const uppy = new Uppy<FileMeta, Record<string, never>>({
  id: direct ? 'oncely-direct' : 'oncely',
  autoProceed: true,
  debug: localStorage.getItem('oncely.debug') === '1',
})
  .use(Dashboard, {
    inline: true,
    target: '#uppy',
    height: 380,
    width: '100%',
    proudlyDisplayPoweredByUppy: false,
    showProgressDetails: true,
  })
  .use(GoldenRetriever, { serviceWorker: worker });
if (!direct) {
  uppy.use(Tus, {
    endpoint: '/v1/tus',
    chunkSize: 8 * 1024 * 1024,
    retryDelays: [0, 1000, 3000, 5000, 10000, 20000],
    // Only the name and type travel as metadata: they (and the length) are what the key's
    // session was created with, so a creation repeated after a reload is the same request.
    allowedMetaFields: ['name', 'type'],
    headers: (file: UppyFile<FileMeta, Record<string, never>>) => ({
      authorization: `Bearer ${token()}`,
      'idempotency-key': file.meta.idempotencyKey ?? '',
    }),
  });
} else {
  // Uppy sends no credentials to a companion: the page asks for a tenant-scoped endpoint.
  const installS3 = async () => {
    if (!token() || uppy.getPlugin('AwsS3')) return;
    const res = await fetch('/v1/uppy-endpoints', { method: 'POST', headers: { authorization: `Bearer ${token()}` } });
    if (!res.ok) return;
    const { companionEndpoint } = (await res.json()) as { companionEndpoint: string };
    uppy.use(AwsS3, {
      companionEndpoint,
      // Large files go straight to the store in parts; small ones as one form post through Oncely.
      shouldUseMultipart: (file) => (file.size ?? 0) > 8 * 1024 * 1024,
      // The key (with the name and type) identifies the file to its session.
      allowedMetaFields: ['name', 'type', 'idempotencyKey'],
    });
  };
  tokenInput.addEventListener('change', () => void installS3());
  await installS3();
}

// The key is minted once per file and kept in the file's metadata (restored on reload).
uppy.on('file-added', (file) => {
  if (!file.meta.idempotencyKey) uppy.setFileMeta(file.id, { idempotencyKey: `web-${crypto.randomUUID()}` });
});
// Uploads restored after a reload continue at once (each file from its server-side offset).
uppy.on('restored', () => {
  for (const uploadID of Object.keys(uppy.getState().currentUploads)) void uppy.restore(uploadID);
});

uppy.on('upload-success', (file) => {
  if (file?.meta.idempotencyKey) void showCommitted(file.name ?? 'file', file.meta.idempotencyKey).then(listStored);
});

const stored = document.querySelector<HTMLUListElement>('#stored')!;
document.querySelector('#refresh')!.addEventListener('click', () => void listStored());
tokenInput.addEventListener('change', () => void listStored());
if (token()) void listStored();

interface StoredUpload {
  uploadId: string;
  status: string;
  bytes: number;
  fileName: string | null;
  contentType: string;
}

/** The newest 20 uploads of the tenant, each with a download link and a delete button. */
async function listStored(): Promise<void> {
  const res = await api('/v1/uploads?limit=20');
  if (!res.ok) return;
  const { items } = (await res.json()) as { items: StoredUpload[] };
  stored.replaceChildren(...items.map(storedItem));
}

function storedItem(u: StoredUpload): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset.uploadId = u.uploadId;
  li.dataset.status = u.status;
  const name = document.createElement('span');
  name.className = 'name';
  name.textContent = `${u.fileName ?? u.uploadId} · ${u.bytes} bytes · ${u.status}`;
  li.append(name);
  if (u.status === 'deleted') return li;
  const download = document.createElement('a');
  download.textContent = 'Download';
  download.className = 'download';
  download.href = '#';
  download.addEventListener('click', (e) => {
    e.preventDefault();
    void (async () => {
      const r = await fetch(`/v1/uploads/${u.uploadId}/download-urls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ expiresInSeconds: 300 }),
      });
      if (r.ok) window.location.assign(((await r.json()) as { url: string }).url);
    })();
  });
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.className = 'delete';
  remove.textContent = 'Delete';
  remove.addEventListener('click', () => {
    remove.disabled = true;
    void (async () => {
      const r = await fetch(`/v1/uploads/${u.uploadId}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token()}`, prefer: 'wait=30' },
      });
      if (r.ok || r.status === 202) await listStored();
      else remove.disabled = false;
    })();
  });
  li.append(download, remove);
  return li;
}

async function api(path: string): Promise<Response> {
  return fetch(path, { headers: { authorization: `Bearer ${token()}` } });
}

/** The committed upload (from the key's stored answer), then its thumbnail once processed. */
async function showCommitted(name: string, key: string): Promise<void> {
  const li = document.createElement('li');
  li.dataset.key = key;
  const img = document.createElement('img');
  img.alt = '';
  const meta = document.createElement('div');
  meta.className = 'meta';
  meta.textContent = `${name} · committing…`;
  li.append(img, meta);
  done.prepend(li);
  let answer: { state?: string; response?: { uploadId: string; bytes: number; sha256: string } } = {};
  for (let i = 0; i < 60 && answer.state !== 'completed'; i++) {
    answer = (await (await api(`/v1/idempotency-keys/${encodeURIComponent(key)}`)).json()) as typeof answer;
    if (answer.state !== 'completed') await new Promise((r) => setTimeout(r, 1000));
  }
  const upload = answer.response;
  if (!upload) return void (meta.textContent = `${name} · not committed yet (key ${key})`);
  li.dataset.uploadId = upload.uploadId;
  meta.textContent = `${name} · ${upload.bytes} bytes · sha256 ${upload.sha256.slice(0, 16)}… · upload ${upload.uploadId}`;
  const detail = (await (await api(`/v1/uploads/${upload.uploadId}?wait=30`)).json()) as {
    status: string;
    renditions?: { name: string }[];
  };
  li.dataset.status = detail.status;
  if (detail.renditions?.some((r) => r.name === 'thumbnail')) {
    const res = await api(`/v1/uploads/${upload.uploadId}/renditions/thumbnail`);
    if (res.ok) img.src = URL.createObjectURL(await res.blob());
  }
}
