import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertAllowedAddress, assertDeliverableUrl, DisallowedUrlError, type Resolver } from '../../src/downstream/url-guard';
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

/** Every form an address takes, with how far it reaches: global (allowed), internal (only with private networks allowed), never. */
const ADDRESS_FORMS: [string, 'global' | 'internal' | 'never', string][] = [
  ['93.184.216.34', 'global', 'public IPv4'],
  ['2606:4700::1111', 'global', 'global unicast IPv6'],
  ['::ffff:93.184.216.34', 'global', 'mapped public IPv4'],
  ['64:ff9b::5db8:d822', 'global', 'NAT64 well-known prefix of a public IPv4'],
  ['2002:5db8:d822::1', 'global', '6to4 of a public IPv4'],
  ['2001:0:5db8:d822:0:0:a247:27dd', 'global', 'Teredo, public server and client (93.184.216.34, 93.184.216.34 obfuscated)'],
  ['127.0.0.1', 'internal', 'loopback'],
  ['10.1.2.3', 'internal', 'private'],
  ['100.64.0.1', 'internal', 'shared address space (CGN)'],
  ['192.0.0.8', 'internal', 'IETF protocol assignments'],
  ['192.0.2.1', 'internal', 'documentation (TEST-NET-1)'],
  ['198.18.0.1', 'internal', 'benchmarking'],
  ['224.0.0.1', 'internal', 'multicast'],
  ['240.0.0.1', 'internal', 'reserved'],
  ['::1', 'internal', 'IPv6 loopback'],
  ['fd00::1', 'internal', 'unique local'],
  ['ff02::1', 'internal', 'IPv6 multicast'],
  ['2001:db8::1', 'internal', 'IPv6 documentation'],
  ['3fff::1', 'internal', 'IPv6 documentation (2024)'],
  ['2001:2::1', 'internal', 'IPv6 benchmarking'],
  ['100::1', 'internal', 'discard-only'],
  ['5f00::1', 'internal', 'segment routing'],
  ['fec0::1', 'internal', 'deprecated site-local'],
  ['::7f00:1', 'internal', 'IPv4-compatible loopback'],
  ['::5db8:d822', 'internal', 'IPv4-compatible (deprecated) even of a public address'],
  ['::ffff:0:5db8:d822', 'internal', 'IPv4-translated (RFC 6145)'],
  ['2002:7f00:1::1', 'internal', '6to4 of loopback'],
  ['64:ff9b::a00:1', 'internal', 'NAT64 of a private address'],
  ['64:ff9b:1::5db8:d822', 'internal', 'local-use NAT64 prefix'],
  ['2001:0:5db8:d822:0:0:80ff:fffe', 'internal', 'Teredo with a loopback client (127.0.0.1 obfuscated)'],
  ['2001:0:7f00:1:0:0:a247:27dd', 'internal', 'Teredo with a loopback server'],
  ['0.0.0.0', 'never', 'unspecified'],
  ['0.1.2.3', 'never', 'this network'],
  ['255.255.255.255', 'never', 'limited broadcast'],
  ['169.254.169.254', 'never', 'link-local (cloud metadata)'],
  ['::', 'never', 'IPv6 unspecified'],
  ['fe80::1', 'never', 'IPv6 link-local'],
  ['fe80::1%eth0', 'never', 'IPv6 link-local with a zone'],
  ['fd00:ec2::254', 'never', 'AWS metadata over IPv6'],
  ['::ffff:169.254.169.254', 'never', 'mapped metadata'],
  ['::ffff:a9fe:a9fe', 'never', 'mapped metadata, hex'],
  ['::a9fe:a9fe', 'never', 'IPv4-compatible metadata'],
  ['::169.254.169.254', 'never', 'IPv4-compatible metadata, dotted'],
  ['::ffff:0:a9fe:a9fe', 'never', 'IPv4-translated metadata'],
  ['2002:a9fe:a9fe::1', 'never', '6to4 of metadata'],
  ['64:ff9b::a9fe:a9fe', 'never', 'NAT64 of metadata'],
  ['64:ff9b:1::a9fe:a9fe', 'never', 'local-use NAT64 of metadata, at the end'],
  ['64:ff9b:1:a9fe:a9:fe00::', 'never', "local-use NAT64 of metadata, RFC 6052's /48 layout"],
  ['2001:0:a9fe:a9fe:0:0:a247:27dd', 'never', 'Teredo with a metadata server'],
  ['2001:0:5db8:d822:0:0:5601:5601', 'never', 'Teredo with a metadata client (obfuscated)'],
];

describe('the address rule: globally routable unicast only, every embedded IPv4 checked again', () => {
  it.each(ADDRESS_FORMS)('%s is %s (%s)', (address, reach) => {
    const allowed = (allowPrivateNetworks: boolean) => {
      try {
        assertAllowedAddress(address, { allowPrivateNetworks });
        return true;
      } catch (err) {
        expect(err).toBeInstanceOf(DisallowedUrlError);
        return false;
      }
    };
    expect([allowed(false), allowed(true)]).toEqual(
      reach === 'global' ? [true, true] : reach === 'internal' ? [false, true] : [false, false],
    );
  });

  it.each(ADDRESS_FORMS.filter(([a]) => a.includes(':') && !a.includes('%')))(
    'the URL http://[%s]/ is refused as the address is',
    async (address, reach) => {
      const url = `http://[${address}]/latest/meta-data/`;
      if (reach === 'global') await expect(assertDeliverableUrl(url, { allowPrivateNetworks: false })).resolves.toBeInstanceOf(URL);
      else
        await expect(assertDeliverableUrl(url, { allowPrivateNetworks: reach === 'internal' ? false : true })).rejects.toThrow(
          DisallowedUrlError,
        );
    },
  );

  it('refuses what is not an address at all', () => {
    expect(() => assertAllowedAddress('not-an-address', { allowPrivateNetworks: true })).toThrow(DisallowedUrlError);
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
