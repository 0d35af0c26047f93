// The progress socket of an import started through Uppy's URL plugin, as Companion speaks it
// (`GET /uppy/{token}/api/{socketToken}`, a WebSocket): `progress` with the bytes read so
// far, then `success` with the upload's JSON as `response.responseText`, or `error`. It
// reads what the import's row and the key's answer say, once a second. Of Uppy's own
// messages, `cancel` (the file removed, or all canceled) cancels the import as a DELETE of its
// upload does; pause and resume are ignored: an import goes on once started.
//
// The endpoint's token lives in browsers, so the sockets are bounded like a route is: a
// tenant's open sockets per process, a message's size, and a socket whose key names no import
// of its caller's says so and closes instead of asking the database forever.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { dependency, problem, Problem } from '../../errors';
import { rawProblemResponse } from '../../http/raw-problem';
import type { Pool } from '../../db/pool';
import { findKeyAnswer } from '../../db/queries/idempotency-keys';
import { currentPrincipal } from '../../tokens/parent';
import { assertParentMay } from '../../http/scopes';
import { COMPANION_IMPORTS, type CompanionOwner, type EndpointOwners } from '../../arrivals/uppy/endpoint';
import { findImportByKey } from '../../db/queries/imports';
import { findUpload } from '../../db/queries/uploads';
import type { Importer } from '../importer';

const SOCKET_PATH = /^\/uppy\/([^/]+)\/api\/([A-Za-z0-9_-]{1,400})$/;

/** The socket token of an import: its key, which the socket follows under the endpoint's tenant. */
export function progressToken(key: string): string {
  return Buffer.from(key).toString('base64url');
}

type Message =
  | { action: 'progress'; payload: { progress: string; bytesUploaded: number; bytesTotal: number } }
  | { action: 'success'; payload: { url: string; response: { status: number; responseText: string } } }
  | { action: 'error'; payload: { error: { message: string } } };

const NO_SUCH_IMPORT: Message = { action: 'error', payload: { error: { message: 'No such import.' } } };

/** Uppy's own messages are a few dozen bytes (`{"action":"cancel"}`). */
const MAX_MESSAGE_BYTES = 4096;

export interface ProgressSocketDeps {
  uppy: EndpointOwners;
  pool: Pool;
  importer: Importer;
  /** A tenant's sockets open at once on this process; one more is refused with 429. */
  maxPerTenant: number;
  /** How often a socket reads its import's state. */
  intervalMs?: number;
  /** How long a socket waits for its key to name an import of its caller's before it gives up. */
  nothingToFollowMs?: number;
}

export class ImportProgressSockets {
  private readonly server = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  private readonly openByTenant = new Map<string, number>();

  constructor(private readonly deps: ProgressSocketDeps) {}

  /** Takes the upgrade when it is for a progress socket (true), else leaves it (false). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const m = SOCKET_PATH.exec(new URL(req.url ?? '/', 'http://socket').pathname);
    if (!m) return false;
    const key = Buffer.from(m[2]!, 'base64url').toString();
    void this.admit(m[1]!).then(
      (owner) => this.upgrade(req, socket, head, owner, key),
      (err: unknown) => socket.end(rawProblemResponse(err instanceof Problem ? err : problem('internal_error'))),
    );
    return true;
  }

  /** Whom the endpoint serves, checked as its HTTP routes check it (companionAuth): minted here, its parent as it is now. */
  private async admit(endpoint: string): Promise<CompanionOwner> {
    const owner = this.deps.uppy.ownerOf(endpoint);
    const current = await dependency('database_unavailable', () => currentPrincipal(this.deps.pool, owner.tenantId, owner.parent));
    assertParentMay(owner.parent, current, COMPANION_IMPORTS);
    return owner;
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, owner: CompanionOwner, key: string): void {
    const open = this.openByTenant.get(owner.tenantId) ?? 0;
    if (open >= this.deps.maxPerTenant) {
      const detail = `This tenant has ${open} import progress sockets open on this server, the most it may; close one or retry later.`;
      socket.end(rawProblemResponse(problem('too_many_progress_sockets', detail, { extra: { limit: this.deps.maxPerTenant } })));
      return;
    }
    // The handshake completes synchronously (no verifyClient), so the count cannot be overtaken.
    this.server.handleUpgrade(req, socket, head, (ws) => {
      this.openByTenant.set(owner.tenantId, (this.openByTenant.get(owner.tenantId) ?? 0) + 1);
      ws.once('close', () => {
        const left = (this.openByTenant.get(owner.tenantId) ?? 1) - 1;
        if (left > 0) this.openByTenant.set(owner.tenantId, left);
        else this.openByTenant.delete(owner.tenantId);
      });
      this.follow(ws, owner, key);
    });
  }

  close(): void {
    for (const ws of this.server.clients) ws.terminate();
    this.server.close();
  }

  private follow(ws: WebSocket, owner: CompanionOwner, key: string): void {
    let last = '';
    let reading = false;
    const giveUpAt = Date.now() + (this.deps.nothingToFollowMs ?? 30_000);
    const tick = async () => {
      if (reading) return;
      reading = true;
      try {
        const message = (await this.state(owner, key)) ?? (Date.now() >= giveUpAt ? NO_SUCH_IMPORT : undefined);
        if (!message) return;
        const text = JSON.stringify(message);
        if (text !== last) ws.send(text);
        last = text;
        if (message.action !== 'progress') ws.close(1000);
      } catch {
        // The database is away: the next tick asks again (Uppy waits minutes for a message).
      } finally {
        reading = false;
      }
    };
    const timer = setInterval(() => void tick(), this.deps.intervalMs ?? 1000);
    ws.on('message', (data) => {
      if (parseAction(String(data)) === 'cancel') void this.cancel(owner, key).then(tick, () => {});
    });
    ws.on('close', () => clearInterval(timer));
    ws.on('error', () => clearInterval(timer));
    void tick();
  }

  /** Cancels this caller's import under `key` while its file is read (once read, it commits: nothing to do). */
  private async cancel(owner: CompanionOwner, key: string): Promise<void> {
    const row = await findImportByKey(this.deps.pool, owner.tenantId, key);
    if (row?.state === 'importing' && (!owner.tokenId || row.token_id === owner.tokenId)) await this.deps.importer.cancel(row);
  }

  /**
   * What the import under `key` has come to, for this endpoint's caller; undefined: nothing to
   * say yet. A key that is not the caller's answers as a key that names nothing, whatever its
   * state, so a socket tells an upload token nothing of another principal's keys.
   */
  private async state(owner: CompanionOwner, key: string): Promise<Message | undefined> {
    const { pool } = this.deps;
    const mine = (tokenId: string | null) => !owner.tokenId || tokenId === owner.tokenId;
    const answer = await findKeyAnswer(pool, owner.tenantId, key);
    if (answer && !answer.expired && answer.response_status !== null) {
      if (answer.response_status < 300 && answer.upload_id) {
        const upload = await findUpload(pool, owner.tenantId, answer.upload_id);
        if (!upload || !mine(upload.token_id)) return undefined;
        return {
          action: 'success',
          payload: {
            url: `/v1/uploads/${answer.upload_id}`,
            response: { status: answer.response_status, responseText: answer.response_body },
          },
        };
      }
      // A token is shown the refusal of its own import only (the import's row stays, failed).
      if (owner.tokenId && !mine((await findImportByKey(pool, owner.tenantId, key))?.token_id ?? null)) return undefined;
      const detail = (JSON.parse(answer.response_body) as { detail?: string; title?: string }) ?? {};
      return { action: 'error', payload: { error: { message: detail.detail ?? detail.title ?? 'The import failed.' } } };
    }
    const row = await findImportByKey(pool, owner.tenantId, key);
    if (!row || !mine(row.token_id)) return undefined;
    if (row.state === 'failed')
      return { action: 'error', payload: { error: { message: 'The import failed; add the link again to retry.' } } };
    const fetched = Number(row.bytes_fetched);
    const total = row.bytes_total === null ? Math.max(fetched, 1) : Number(row.bytes_total);
    return {
      action: 'progress',
      payload: { progress: ((fetched / total) * 100).toFixed(2), bytesUploaded: fetched, bytesTotal: total },
    };
  }
}

/** The `action` of a message Uppy sent, if it is one. */
function parseAction(text: string): unknown {
  try {
    return (JSON.parse(text) as { action?: unknown } | null)?.action;
  } catch {
    return undefined;
  }
}
