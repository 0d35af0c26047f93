// Webhook targets must be http(s) and, unless private networks are allowed, must not
// resolve to loopback, private, link-local (cloud metadata) or otherwise internal
// addresses. The endpoint's URL is checked when it is created; at delivery the *connection*
// resolves the name through `guardedLookup`, so the address connected to is the address
// checked (a second resolution, as with DNS rebinding, cannot slip past the check).
// Errors never name the resolved address: tenants see them, and internal addresses are
// none of their business.
import dns from 'node:dns';
import net from 'node:net';

export class DisallowedUrlError extends Error {}

/** Resolves a host name to every address (injectable for tests). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

const blockList = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blockList.addSubnet(addr, prefix, 'ipv4');
}
// NAT64 (64:ff9b::/96, 64:ff9b:1::/48) addresses reach IPv4 hosts, internal ones included;
// fc00::/7 is unique-local, fe80::/10 link-local. IPv4-mapped addresses (::ffff:a.b.c.d)
// are checked as the IPv4 address they carry (unmapIpv4).
for (const [addr, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blockList.addSubnet(addr, prefix, 'ipv6');
}
/** Never allowed, even with private networks allowed: link-local and cloud metadata services. */
const alwaysBlocked = new net.BlockList();
alwaysBlocked.addSubnet('169.254.0.0', 16, 'ipv4');
alwaysBlocked.addSubnet('fe80::', 10, 'ipv6');
alwaysBlocked.addAddress('0.0.0.0', 'ipv4');
alwaysBlocked.addAddress('fd00:ec2::254', 'ipv6'); // AWS instance metadata over IPv6
alwaysBlocked.addAddress('64:ff9b::a9fe:a9fe', 'ipv6'); // 169.254.169.254 through NAT64

export interface GuardOptions {
  allowPrivateNetworks: boolean;
}

/** Throws when connecting to `address` is not allowed. */
export function assertAllowedAddress(raw: string, opts: GuardOptions): void {
  const address = unmapIpv4(raw);
  const type = net.isIPv6(address) ? 'ipv6' : 'ipv4';
  if (alwaysBlocked.check(address, type))
    throw new DisallowedUrlError('the host resolves to an address that is never allowed (link-local or metadata service)');
  if (!opts.allowPrivateNetworks && blockList.check(address, type))
    throw new DisallowedUrlError('the host resolves to a private or internal address');
}

/** `::ffff:7f00:1` or `::ffff:127.0.0.1` → `127.0.0.1`; anything else unchanged. */
function unmapIpv4(address: string): string {
  if (!net.isIPv6(address)) return address;
  const normal = new URL(`http://[${address}]/`).hostname.slice(1, -1); // WHATWG form: ::ffff:7f00:1
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(normal);
  if (!m) return address;
  const hi = parseInt(m[1]!, 16);
  const lo = parseInt(m[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Parses and checks a webhook URL (scheme, no credentials, every resolved address allowed). */
export async function assertDeliverableUrl(raw: string, opts: GuardOptions & { resolve?: Resolver }): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DisallowedUrlError('not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DisallowedUrlError('only http and https URLs are allowed');
  if (url.username || url.password) throw new DisallowedUrlError('URLs with credentials are not allowed');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  for (const { address } of net.isIP(host) ? [{ address: host }] : await resolveOrRefuse(host, opts.resolve ?? systemResolver)) {
    assertAllowedAddress(address, opts);
  }
  return url;
}

async function resolveOrRefuse(host: string, resolve: Resolver) {
  try {
    const addresses = await resolve(host);
    if (addresses.length === 0) throw new Error('no addresses');
    return addresses;
  } catch {
    throw new DisallowedUrlError(`host ${host} does not resolve`);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls connections: resolves once, checks every address, and hands the
 * connection only checked addresses (in the form the caller asked for).
 */
export function guardedLookup(opts: GuardOptions & { resolve?: Resolver }) {
  const resolve = opts.resolve ?? systemResolver;
  return function lookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
    resolveOrRefuse(hostname, resolve).then(
      (addresses) => {
        try {
          for (const { address } of addresses) assertAllowedAddress(address, opts);
        } catch (err) {
          return callback(err as NodeJS.ErrnoException, '');
        }
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        if (wanted.length === 0)
          return callback(Object.assign(new Error(`no IPv${options.family} address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        if (options.all) callback(null, wanted);
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}
