// Browser side of the client: pending uploads from File objects (SHA-256 computed once,
// incrementally, with hash-wasm), an IndexedDB outbox that keeps the File itself (so a
// reload resumes with the same key and bytes), and an XMLHttpRequest transport for
// upload progress (fetch cannot report request-body progress over HTTP/1.1).
import { createSHA256 } from 'hash-wasm';
import { createStore, del, get, keys, set, type UseStore } from 'idb-keyval';
import type { Outbox, PendingUpload, UploadBody } from './types';

const CHUNK = 4 * 1024 * 1024;

export async function pendingFromBrowserFile(file: File): Promise<PendingUpload> {
  const hasher = await createSHA256();
  hasher.init();
  for (let offset = 0; offset < file.size; offset += CHUNK) {
    hasher.update(new Uint8Array(await file.slice(offset, offset + CHUNK).arrayBuffer()));
  }
  const id = crypto.randomUUID();
  return {
    id,
    idempotencyKey: `oncely-${crypto.randomUUID()}`,
    sha256: hasher.digest('hex'),
    bytes: file.size,
    contentType: file.type || 'application/octet-stream',
    fileName: file.name,
    source: id,
    createdAt: new Date().toISOString(),
    attempts: 0,
  };
}

interface Stored {
  pending: PendingUpload;
  file: Blob;
}

export class IndexedDbOutbox implements Outbox {
  private readonly store: UseStore = createStore('oncely', 'outbox');

  async list(): Promise<PendingUpload[]> {
    const all = await Promise.all((await keys(this.store)).map((k) => get<Stored>(k, this.store)));
    return all
      .filter((s): s is Stored => !!s)
      .map((s) => s.pending)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** Stores the upload and its bytes; later calls update the record and keep the bytes. */
  async put(item: PendingUpload, file?: Blob): Promise<void> {
    const existing = await get<Stored>(item.id, this.store);
    const blob = file ?? existing?.file;
    if (!blob) throw new Error(`no bytes stored for ${item.id}`);
    await set(item.id, { pending: item, file: blob } satisfies Stored, this.store);
  }

  async remove(id: string): Promise<void> {
    await del(id, this.store);
  }

  async file(id: string): Promise<Blob | undefined> {
    return (await get<Stored>(id, this.store))?.file;
  }
}

/** A fetch-shaped function over XMLHttpRequest that reports upload progress. */
export function xhrFetch(onUploadProgress: (url: string, loaded: number) => void): typeof fetch {
  return ((input: string, init: RequestInit = {}) =>
    new Promise<Response>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(init.method ?? 'GET', input);
      for (const [k, v] of Object.entries((init.headers ?? {}) as Record<string, string>)) {
        if (k !== 'content-length') xhr.setRequestHeader(k, v); // the browser sets it
      }
      xhr.responseType = 'text';
      xhr.upload.onprogress = (e) => onUploadProgress(input, e.loaded);
      xhr.onload = () => {
        const headers = new Headers();
        for (const line of xhr
          .getAllResponseHeaders()
          .trim()
          .split(/[\r\n]+/)) {
          const i = line.indexOf(':');
          if (i > 0) headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
        }
        resolve(new Response(xhr.status === 204 ? null : xhr.responseText, { status: xhr.status, headers }));
      };
      xhr.onerror = () => reject(new TypeError('network error'));
      xhr.ontimeout = () => reject(new TypeError('timeout'));
      init.signal?.addEventListener('abort', () => xhr.abort(), { once: true });
      xhr.onabort = () => reject(init.signal?.reason ?? new DOMException('aborted', 'AbortError'));
      xhr.send((init.body ?? null) as XMLHttpRequestBodyInit | null);
    })) as typeof fetch;
}

export type { UploadBody };
