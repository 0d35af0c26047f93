// One LISTEN connection outside the pool, for one channel: it reconnects with backoff and
// tells its owner when it is lost, since whatever was NOTIFYed while nobody listened is gone
// (each owner has its own way to make up for that: re-reading rows, reading by id).
import pg from 'pg';
import type { Logger } from 'pino';

const RECONNECT_MAX_MS = 10_000;

export interface ListenHandlers {
  message(payload: string): void;
  /** The connection is down; it is being made again. */
  lost(): void;
}

export class ListenConnection {
  private client: pg.Client | undefined;
  private listening = false;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private failures = 0;

  private constructor(
    private readonly connectionString: string,
    private readonly channel: string,
    private readonly log: Logger,
    private readonly handlers: ListenHandlers,
  ) {}

  /** Starts listening; a database that is down now is retried in the background. */
  static async start(connectionString: string, channel: string, log: Logger, handlers: ListenHandlers): Promise<ListenConnection> {
    const connection = new ListenConnection(connectionString, channel, log, handlers);
    await connection.connect();
    return connection;
  }

  /** True while the LISTEN connection is up. */
  get isListening(): boolean {
    return this.listening;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.listening = false;
    await this.client?.end().catch(() => {}); // closing: a connection that fails to end is gone anyway
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, keepAlive: true, connectionTimeoutMillis: 5_000 });
    client.on('notification', (msg) => {
      if (msg.channel === this.channel && msg.payload) this.handlers.message(msg.payload);
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
      this.listening = true;
      this.failures = 0;
    } catch (err) {
      this.log.warn({ err, channel: this.channel }, 'LISTEN failed; retrying in the background');
      this.lost(client);
    }
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return; // an older connection's late event
    this.client = undefined;
    this.listening = false;
    client.end().catch(() => {}); // already broken; a new one is made below
    if (this.closed) return;
    this.handlers.lost();
    const delay = Math.min(RECONNECT_MAX_MS, 250 * 2 ** this.failures++);
    this.reconnectTimer = setTimeout(() => void this.connect(), delay);
    this.reconnectTimer.unref();
  }
}
