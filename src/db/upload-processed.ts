// Wakes `GET /v1/uploads/{id}?wait` when its upload reaches 'processed': migration 006's
// trigger NOTIFYs on commit and one LISTEN connection per API process (outside the pool)
// hands the id to whoever waits for it. Waiters still re-read the row now and then, which
// covers a notification lost while the connection was down and reconnecting.
import type { Logger } from 'pino';
import { ListenConnection } from './listen-connection';

const CHANNEL = 'oncely_upload_processed';

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

/** LISTENs on its own connection (listen-connection.ts); polls quickly while it is down. */
export class UploadProcessedListener implements ProcessedSignal {
  private readonly waiters = new Waiters();
  private connection!: ListenConnection;

  private constructor(
    private readonly listeningPollMs: number,
    private readonly fallbackPollMs: number,
  ) {}

  /** Starts listening; a database that is down now is retried in the background. */
  static async start(
    connectionString: string,
    log: Logger,
    opts: { pollMs?: number; fallbackPollMs?: number } = {},
  ): Promise<UploadProcessedListener> {
    const listener = new UploadProcessedListener(opts.pollMs ?? 5_000, opts.fallbackPollMs ?? 250);
    listener.connection = await ListenConnection.start(connectionString, CHANNEL, log, {
      message: (uploadId) => listener.waiters.wake(uploadId),
      // Anything committed while nobody listened is found by the waiters' next read.
      lost: () => listener.waiters.wakeAll(),
    });
    return listener;
  }

  get pollMs(): number {
    return this.isListening ? this.listeningPollMs : this.fallbackPollMs;
  }

  /** True while the LISTEN connection is up. */
  get isListening(): boolean {
    return this.connection.isListening;
  }

  subscribe(uploadId: string, ms: number): Subscription {
    return this.waiters.subscribe(uploadId, ms);
  }

  async close(): Promise<void> {
    await this.connection.close();
    this.waiters.wakeAll();
  }
}
