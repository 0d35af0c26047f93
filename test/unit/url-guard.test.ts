import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertDeliverableUrl, DisallowedUrlError, type Resolver } from '../../src/downstream/url-guard';
import { WebhookHttp } from '../../src/downstream/webhook-http';

describe('webhook URL guard', () => {
  it('allows public http(s) addresses', async () => {
    await expect(assertDeliverableUrl('https://93.184.216.34/hook', { allowPrivateNetworks: false })).resolves.toBeInstanceOf(URL);
    await expect(assertDeliverableUrl('http://[2606:4700::1111]/hook', { allowPrivateNetworks: false })).resolves.toBeInstanceOf(URL);
  });

  it.each([
    'http://127.0.0.1/x',
    'http://localhost/x',
    'http://10.1.2.3/x',
    'http://192.168.1.1/x',
    'http://172.20.0.1/x',
    'http://[::1]/x',
    'http://[fd00::1]/x',
    'http://[64:ff9b::a00:1]/x',
    'http://[64:ff9b::7f00:1]/x',
    'http://[::ffff:127.0.0.1]/x',
    'http://[::ffff:10.0.0.1]/x',
  ])('refuses private, loopback or NAT64/mapped %s unless private networks are allowed', async (url) => {
    await expect(assertDeliverableUrl(url, { allowPrivateNetworks: false })).rejects.toThrow(/private or internal/);
    await expect(assertDeliverableUrl(url, { allowPrivateNetworks: true })).resolves.toBeInstanceOf(URL);
  });

  it.each([
    'http://169.254.169.254/latest',
    'http://[fe80::1]/x',
    'http://0.0.0.0/x',
    'http://[fd00:ec2::254]/latest',
    'http://[::ffff:169.254.169.254]/x',
    'http://[64:ff9b::a9fe:a9fe]/x',
  ])('always refuses %s', async (url) => {
    await expect(assertDeliverableUrl(url, { allowPrivateNetworks: true })).rejects.toThrow(/never allowed/);
  });

  it.each(['ftp://example.com', 'file:///etc/passwd', 'nonsense', 'http://u:p@example.com/'])('refuses %s', async (url) => {
    await expect(assertDeliverableUrl(url, { allowPrivateNetworks: true })).rejects.toThrow();
  });

  it('never names the resolved internal address in its error', async () => {
    const resolve: Resolver = async () => [{ address: '10.11.12.13', family: 4 }];
    const err = await assertDeliverableUrl('https://hooks.example.test/x', { allowPrivateNetworks: false, resolve }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DisallowedUrlError);
    expect((err as Error).message).not.toContain('10.11.12.13');
  });
});

describe('webhook delivery connects only to the address it checked', () => {
  let server: Server;
  let port: number;
  let received = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      received++;
      req.resume();
      res.writeHead(204).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('a name that answers public first and loopback second (DNS rebinding) is not delivered to', async () => {
    let calls = 0;
    const rebinding: Resolver = async () =>
      calls++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    const opts = { allowPrivateNetworks: false, resolve: rebinding };
    const url = `http://rebind.example.test:${port}/hook`;
    await expect(assertDeliverableUrl(url, opts)).resolves.toBeInstanceOf(URL); // the first answer passes the check
    const http = new WebhookHttp(opts);
    try {
      const err = await http
        .post({ url, headers: { 'content-type': 'application/json' }, body: '{}', timeoutMs: 5_000 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DisallowedUrlError);
      expect((err as Error).message).not.toContain('127.0.0.1');
    } finally {
      await http.close();
    }
    expect(calls).toBe(2);
    expect(received).toBe(0);
  });

  it('the same name is delivered to when every answer is allowed (private networks on)', async () => {
    const resolve: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const http = new WebhookHttp({ allowPrivateNetworks: true, resolve });
    try {
      const before = received;
      const answer = await http.post({ url: `http://receiver.example.test:${port}/hook`, headers: {}, body: '{}', timeoutMs: 5_000 });
      expect(answer.status).toBe(204);
      expect(received).toBe(before + 1);
    } finally {
      await http.close();
    }
  });
});
