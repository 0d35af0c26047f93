// The upload pages: an Uppy Dashboard sending over tus to /v1/tus (`/`; with
// `?protocol=ietf-draft-05`, over the IETF resumable-upload draft to POST /v1/uploads), or straight to
// the object store with @uppy/aws-s3 through Oncely's companion routes (`/direct`; the
// body's data-uploader says which). The page holds an upload token, never the API key
// (src/web/upload-token.ts; minted through the browser's console session). Each file gets its
// Idempotency-Key once, when it is added; Golden Retriever keeps files, their metadata (the
// key with them) and progress across reloads. Committed uploads are listed with their
// thumbnail once processed.
import Uppy, { type Meta, type UppyFile } from '@uppy/core';
import Dashboard from '@uppy/dashboard';
import GoldenRetriever from '@uppy/golden-retriever';
import Tus from '@uppy/tus';
import AwsS3 from '@uppy/aws-s3';
import Url from '@uppy/url';
import '@uppy/core/css/style.min.css';
import '@uppy/dashboard/css/style.min.css';
import '@uppy/url/css/style.min.css';
import { currentUploadToken, type UploadToken } from './upload-token';

type FileMeta = Meta & { idempotencyKey?: string };

const done = document.querySelector<HTMLUListElement>('#done')!;
const who = document.querySelector<HTMLParagraphElement>('#who')!;
let held: UploadToken | null = null;
/** Keeps a live token (renewed a minute before it expires) and says which one on the page. */
async function refreshToken(): Promise<void> {
  held = await currentUploadToken();
  who.dataset.tokenId = held?.id ?? '';
  who.innerHTML = held
    ? `Uploading with upload token <code></code>, valid until ${new Date(held.expiresAt).toLocaleTimeString()}. Minted through your <a href="/console">console</a> session.`
    : 'No upload token: <a href="/console/sign-in?next=/console">sign in to the console</a> with a key holding tokens:mint, then reload.';
  if (held) who.querySelector('code')!.textContent = held.id;
}
await refreshToken();
setInterval(() => void refreshToken(), 30_000);
const token = () => held?.token ?? '';

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
// tus-js-client (under @uppy/tus) also speaks the IETF draft, interop version 6.
const draft = new URLSearchParams(location.search).get('protocol') === 'ietf-draft-05';
if (!direct) {
  uppy.use(Tus, {
    endpoint: draft ? '/v1/uploads' : '/v1/tus',
    ...(draft ? { protocol: 'ietf-draft-05' } : {}),
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
}
// Uppy sends no credentials to a companion: the page asks for a tenant-scoped endpoint (the
// S3 uploader's, and the Link source's: Oncely imports the file under its key). The tus page
// does not wait for it: its uploads (and those restored after a reload) start at once.
const companion: Promise<string | undefined> = token()
  ? fetch('/v1/uppy-endpoints', { method: 'POST', headers: { authorization: `Bearer ${token()}` } }).then(
      async (res) => (res.ok ? ((await res.json()) as { companionEndpoint: string }).companionEndpoint : undefined),
      () => undefined,
    )
  : Promise.resolve(undefined);
void companion.then((endpoint) => {
  // Absolute: Uppy derives its progress socket's address (ws://…/api/{token}) from it.
  if (endpoint && held?.importHosts?.length) uppy.use(Url, { companionUrl: new URL(endpoint, location.origin).href });
});
if (direct) {
  const installS3 = async (companionEndpoint: string | undefined) => {
    if (!companionEndpoint || uppy.getPlugin('AwsS3')) return;
    uppy.use(AwsS3, {
      companionEndpoint,
      // Large files go straight to the store in parts; small ones as one form post through Oncely.
      shouldUseMultipart: (file) => (file.size ?? 0) > 8 * 1024 * 1024,
      // The key (with the name and type) identifies the file to its session.
      allowedMetaFields: ['name', 'type', 'idempotencyKey'],
    });
  };
  await installS3(await companion);
}

// The key is minted once per file and kept in the file's metadata (restored on reload).
uppy.on('file-added', (file) => {
  if (!file.meta.idempotencyKey) uppy.setFileMeta(file.id, { idempotencyKey: `web-${crypto.randomUUID()}` });
});
// Uploads restored after a reload continue at once (each file from its server-side offset).
uppy.on('restored', () => {
  for (const uploadID of Object.keys(uppy.getState().currentUploads)) void uppy.restore(uploadID);
});

// A file whose retries ran out (a long outage, a session busy past the retry delays) is
// tried again by itself, from its server-side offset: at most 20 times, 10 s apart, and at
// once when the browser comes back online.
const autoRetries = new Map<string, number>();
uppy.on('upload-error', (file) => {
  if (!file) return;
  const n = (autoRetries.get(file.id) ?? 0) + 1;
  autoRetries.set(file.id, n);
  if (n <= 20) setTimeout(() => navigator.onLine && uppy.getFile(file.id)?.error && void uppy.retryUpload(file.id), 10_000);
});
uppy.on('back-online', () => void uppy.retryAll());

uppy.on('upload-success', (file) => {
  if (file?.meta.idempotencyKey) void showCommitted(file.name ?? 'file', file.meta.idempotencyKey);
});

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
