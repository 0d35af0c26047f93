// Wakes `GET /v1/uploads/{id}?wait` when its upload reaches 'processed': migration 006's
// trigger NOTIFYs on commit and one LISTEN connection per API process (outside the pool)
// hands the id to whoever waits for it. Waiters still re-read the row now and then, which
// covers a notification lost while the connection was down and reconnecting.
import pg from 'pg';
import type { Logger } from 'pino';

const CHANNEL = 'oncely_upload_processed';
const RECONNECT_MAX_MS = 10_000;

export interface Subscription {
  /** 'processed' when the upload's notification arrived, 'timeout' when `ms` passed first. */
  readonly outcome: Promise<'processed' | 'timeout'>;
  cancel(): void;
}

export interface ProcessedSignal {
  /** Subscribe before reading the row, so a commit between the read and the wait is not missed. */
  subscribe(uploadId: string, ms: number): Subscription;
  /** How long a waiter may sleep before re-reading the row. */
  readonly pollMs: number;
  close(): Promise<void>;
}

type Wake = () => void;

class Waiters {
  private readonly byUpload = new Map<string, Set<Wake>>();

  subscribe(uploadId: string, ms: number): Subscription {
    let wake!: Wake;
    let timer: NodeJS.Timeout | undefined;
    const outcome = new Promise<'processed' | 'timeout'>((resolve) => {
      wake = () => {
        this.remove(uploadId, wake);
        clearTimeout(timer);
        resolve('processed');
      };
      timer = setTimeout(() => {
        this.remove(uploadId, wake);
        resolve('timeout');
      }, ms);
    });
    let set = this.byUpload.get(uploadId);
    if (!set) this.byUpload.set(uploadId, (set = new Set()));
    set.add(wake);
    return {
      outcome,
      cancel: () => {
        clearTimeout(timer);
        this.remove(uploadId, wake);
      },
    };
  }

  wake(uploadId: string): void {
    for (const wake of [...(this.byUpload.get(uploadId) ?? [])]) wake();
  }

  wakeAll(): void {
    for (const id of [...this.byUpload.keys()]) this.wake(id);
  }

  private remove(uploadId: string, wake: Wake): void {
    const set = this.byUpload.get(uploadId);
    if (!set) return;
    set.delete(wake);
    if (set.size === 0) this.byUpload.delete(uploadId);
  }
}

/** For databases nobody can LISTEN on (the embedded PGlite): waiters simply poll. */
export function pollingOnly(pollMs = 250): ProcessedSignal {
  const waiters = new Waiters();
  return {
    pollMs,
    subscribe: (uploadId, ms) => waiters.subscribe(uploadId, ms),
    close: async () => waiters.wakeAll(),
  };
}

/** LISTENs on its own connection; reconnects with backoff; polls quickly while down. */
export class UploadProcessedListener implements ProcessedSignal {
  private readonly waiters = new Waiters();
  private client: pg.Client | undefined;
  private listening = false;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private failures = 0;

  private constructor(
    private readonly connectionString: string,
    private readonly log: Logger,
    private readonly listeningPollMs: number,
    private readonly fallbackPollMs: number,
  ) {}

  /** Starts listening; a database that is down now is retried in the background. */
  static async start(
    connectionString: string,
    log: Logger,
    opts: { pollMs?: number; fallbackPollMs?: number } = {},
  ): Promise<UploadProcessedListener> {
    const listener = new UploadProcessedListener(connectionString, log, opts.pollMs ?? 5_000, opts.fallbackPollMs ?? 250);
    await listener.connect();
    return listener;
  }

  get pollMs(): number {
    return this.listening ? this.listeningPollMs : this.fallbackPollMs;
  }

  /** True while the LISTEN connection is up. */
  get isListening(): boolean {
    return this.listening;
  }

  subscribe(uploadId: string, ms: number): Subscription {
    return this.waiters.subscribe(uploadId, ms);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.listening = false;
    this.waiters.wakeAll();
    await this.client?.end().catch(() => {}); // closing: a connection that fails to end is gone anyway
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, keepAlive: true, connectionTimeoutMillis: 5_000 });
    client.on('notification', (msg) => {
      if (msg.channel === CHANNEL && msg.payload) this.waiters.wake(msg.payload);
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      this.listening = true;
      this.failures = 0;
    } catch (err) {
      this.log.warn({ err }, 'upload notifications: LISTEN failed; waiters poll until it is back');
      this.lost(client);
    }
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return; // an older connection's late event
    this.client = undefined;
    this.listening = false;
    client.end().catch(() => {}); // already broken; a new one is made below
    if (this.closed) return;
    // Anything committed while nobody listened is found by the waiters' next read.
    this.waiters.wakeAll();
    const delay = Math.min(RECONNECT_MAX_MS, 250 * 2 ** this.failures++);
    this.reconnectTimer = setTimeout(() => void this.connect(), delay);
    this.reconnectTimer.unref();
  }
}
