// Seals secrets at rest: stored answers that carry one (a new API key, a webhook signing
// secret) and webhook endpoints' signing secrets, so no table holds them in plain text.
// AES-256-GCM under SECRETS_KEY, with the row's identity as associated data, so a sealed
// value cannot be moved to another row and opened there.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

const PREFIX = 'sealed:v1:';

/** Associated data for a webhook endpoint's signing secret: it opens only for that endpoint. */
/** The context a pipeline's signing secret is sealed under. */
export function pipelineSecretContext(tenantId: string, name: string): string {
  return `pipeline\n${tenantId}\n${name}`;
}

/** Associated data for a storage target's secret access key: it opens only for that target. */
export function storageTargetSecretContext(targetId: string): string {
  return `storage-target\n${targetId}`;
}

export function webhookSecretContext(endpointId: string): string {
  return `webhook-endpoint\n${endpointId}`;
}

export class SecretBox {
  /**
   * `previous`: keys SECRETS_KEY replaced (SECRETS_KEY_PREVIOUS), still tried when a value
   * sealed before the rotation is opened; sealing and signing use `key` only.
   */
  constructor(
    private readonly key: Buffer,
    private readonly previous: Buffer[] = [],
  ) {
    for (const k of [key, ...previous]) if (k.length !== 32) throw new Error('SECRETS_KEY must be 32 bytes (base64-encoded)');
  }

  seal(plain: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  }

  /** HMAC-SHA256 (base64url) of `data` under a key of its own per `purpose`: URLs the API signs and later checks. */
  sign(purpose: string, data: string): string {
    const key = createHmac('sha256', this.key).update(`oncely-sign\n${purpose}`).digest();
    return createHmac('sha256', key).update(data).digest('base64url');
  }

  /** Whether `signature` is `sign(purpose, data)` (constant time). */
  verify(purpose: string, data: string, signature: string): boolean {
    const want = Buffer.from(this.sign(purpose, data));
    const got = Buffer.from(signature);
    return got.length === want.length && timingSafeEqual(got, want);
  }

  /** A signature of `data` that lasts `seconds`: what a signed URL or token carries (`expires` in Unix seconds). */
  signUntil(purpose: string, data: string, seconds: number): { expires: number; signature: string } {
    const expires = Math.floor(Date.now() / 1000) + seconds;
    return { expires, signature: this.sign(purpose, `${data}\n${expires}`) };
  }

  /** Whether `signUntil(purpose, data, …)` made this pair ('invalid' when not, or changed) and it still lasts. */
  checkUntil(purpose: string, data: string, expires: string | undefined, signature: string | undefined): 'valid' | 'invalid' | 'expired' {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires) || !this.verify(purpose, `${data}\n${expires}`, signature)) return 'invalid';
    return Number(expires) * 1000 < Date.now() ? 'expired' : 'valid';
  }

  /** Opens a sealed value (under SECRETS_KEY or a previous one); anything not sealed (older rows) is returned as is. */
  open(stored: string, context: string): string {
    if (!stored.startsWith(PREFIX)) return stored;
    const raw = Buffer.from(stored.slice(PREFIX.length), 'base64');
    try {
      return openWith(this.key, raw, context);
    } catch (err) {
      // Sealed before a rotation: the previous keys, in the order configured.
      for (const key of this.previous) {
        try {
          return openWith(key, raw, context);
        } catch {
          // not this one
        }
      }
      throw err;
    }
  }
}

function openWith(key: Buffer, raw: Buffer, context: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/**
 * The configured key, or (single-node default) one generated once and kept in DATA_DIR.
 * Every API replica must share it: deployments with several replicas set SECRETS_KEY.
 */
export async function loadSecretBox(configured: string | undefined, dataDir: string, previous: string[] = []): Promise<SecretBox> {
  const old = previous.map((k) => Buffer.from(k, 'base64'));
  if (configured) return new SecretBox(Buffer.from(configured, 'base64'), old);
  const file = path.join(dataDir, 'secrets-key');
  await mkdir(dataDir, { recursive: true });
  try {
    // 'wx': of several processes starting at once, one writes and the others read its key.
    await writeFile(file, randomBytes(32).toString('base64'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  for (let i = 0; ; i++) {
    const text = (await readFile(file, 'utf8')).trim();
    if (text) return new SecretBox(Buffer.from(text, 'base64'), old);
    if (i > 50) throw new Error(`${file} is empty`);
    await new Promise((r) => setTimeout(r, 20)); // the writer has created but not yet filled it
  }
}
