// A real webhook receiver on loopback: verifies Standard Webhooks signatures with the same
// package the sender uses, counts deliveries per webhook-id, and answers with scripted
// statuses (e.g. 500, 500, then 200).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  verified: boolean;
  json: any;
  /** What the receiver answered. */
  answered: number;
  /** The request's Idempotency-Key header (pipeline calls send one). */
  idempotencyKey: string | undefined;
  /** The W3C traceparent the sender put on the request (tracing on). */
  traceparent: string | undefined;
}

export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  secret = '';
  /** Statuses to answer per event type, in order; when used up, `fallback` is answered. */
  script: Record<string, number[]> = {};
  fallback = 200;
  retryAfter: string | undefined;
  /** Delay before answering (to catch a sender mid-delivery). */
  delayMs = 0;
  /** A JSON body to answer with, per event type (e.g. a hook's `{ message }`). */
  answerBody: Record<string, unknown> = {};
  private server?: http.Server;
  url = '';

  async start(path = '/hooks'): Promise<this> {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const headers = {
          'webhook-id': String(req.headers['webhook-id']),
          'webhook-timestamp': String(req.headers['webhook-timestamp']),
          'webhook-signature': String(req.headers['webhook-signature']),
        };
        let verified = false;
        try {
          new Webhook(this.secret).verify(body, headers);
          verified = true;
        } catch {
          verified = false;
        }
        const json = JSON.parse(body);
        const status = this.script[json.type]?.shift() ?? this.fallback;
        this.received.push({
          answered: status,
          id: headers['webhook-id'],
          timestamp: headers['webhook-timestamp'],
          signature: headers['webhook-signature'],
          body,
          verified,
          json,
          idempotencyKey: req.headers['idempotency-key'] as string | undefined,
          traceparent: req.headers.traceparent as string | undefined,
        });
        const answer = this.answerBody[json.type];
        setTimeout(() => {
          res.writeHead(status, {
            ...(this.retryAfter && status >= 400 ? { 'retry-after': this.retryAfter } : {}),
            ...(answer !== undefined ? { 'content-type': 'application/json' } : {}),
          });
          res.end(answer !== undefined ? JSON.stringify(answer) : undefined);
        }, this.delayMs);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
    return this;
  }

  ofType(type: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.json.type === type);
  }

  distinctIds(type?: string): Set<string> {
    return new Set((type ? this.ofType(type) : this.received).map((r) => r.id));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
