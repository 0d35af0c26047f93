// The operator screen (/setup): the API key is entered here once and kept in this browser's
// storage; the upload pages use it only to mint upload tokens (src/web/upload-token.ts).
// Below, the tenant's stored uploads (GET /v1/uploads) with a download link (a signed
// download URL) and a delete button (DELETE, erased within the wait).
import { IMPORT_HOSTS_STORAGE, MINTER_KEY_STORAGE, TOKEN_STORAGE } from './upload-token';

const keyInput = document.querySelector<HTMLInputElement>('#key')!;
const state = document.querySelector<HTMLParagraphElement>('#state')!;
const stored = document.querySelector<HTMLUListElement>('#stored')!;
keyInput.value = localStorage.getItem(MINTER_KEY_STORAGE) ?? '';
const key = () => keyInput.value.trim();
const showState = () => (state.textContent = key() ? 'A key is set: the upload pages mint their tokens with it.' : 'No key set yet.');
showState();
keyInput.addEventListener('change', () => {
  localStorage.setItem(MINTER_KEY_STORAGE, key());
  // A token minted with another key is not this one's.
  localStorage.removeItem(TOKEN_STORAGE);
  showState();
  void listStored();
});
const hostsInput = document.querySelector<HTMLInputElement>('#import-hosts')!;
hostsInput.value = localStorage.getItem(IMPORT_HOSTS_STORAGE) ?? '';
hostsInput.addEventListener('change', () => {
  localStorage.setItem(IMPORT_HOSTS_STORAGE, hostsInput.value.trim());
  // The page's next token lists them.
  localStorage.removeItem(TOKEN_STORAGE);
});
document.querySelector('#refresh')!.addEventListener('click', () => void listStored());
if (key()) void listStored();

interface StoredUpload {
  uploadId: string;
  status: string;
  bytes: number;
  fileName: string | null;
}

/** The newest 20 uploads of the tenant, each with a download link and a delete button. */
async function listStored(): Promise<void> {
  const res = await fetch('/v1/uploads?limit=20', { headers: { authorization: `Bearer ${key()}` } });
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
        headers: { authorization: `Bearer ${key()}`, 'content-type': 'application/json' },
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
        headers: { authorization: `Bearer ${key()}`, prefer: 'wait=30' },
      });
      if (r.ok || r.status === 202) await listStored();
      else remove.disabled = false;
    })();
  });
  li.append(download, remove);
  return li;
}
