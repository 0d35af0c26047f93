// The one address rule of every outgoing request (imports, webhooks, validation hooks, a
// pipeline's calls): http(s) only, and every address connected to globally routable unicast
// per IANA's special-purpose registries, with every IPv4 an IPv6 address embeds (mapped,
// compatible, translated, NAT64, 6to4, Teredo) checked again; private networks may be
// allowed (tests, an on-premises install), link-local and metadata services never. The endpoint's URL is checked when it is created; at delivery the *connection*
// resolves the name through `guardedLookup`, so the address connected to is the address
// checked (a second resolution, as with DNS rebinding, cannot slip past the check).
// Errors never name the resolved address: tenants see them, and internal addresses are
// none of their business.
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

export class DisallowedUrlError extends Error {}

/** Resolves a host name to every address (injectable for tests). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/**
 * How far an address reaches: `global` (globally routable unicast per IANA's special-purpose
 * registries), `internal` (loopback, private, shared, reserved, documentation, multicast…:
 * allowed only with private networks allowed), or `never` (unspecified, link-local, a cloud
 * metadata service: refused even then).
 */
type Reach = 'global' | 'internal' | 'never';
const ORDER: Reach[] = ['global', 'internal', 'never'];
const worst = (...reaches: Reach[]): Reach => ORDER[Math.max(...reaches.map((r) => ORDER.indexOf(r)))]!;

const METADATA_V6 = ipaddr.parse('fd00:ec2::254'); // AWS instance metadata over IPv6
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

function reachOfIpv4(a: ipaddr.IPv4): Reach {
  const range = a.range();
  if (range === 'unicast') return 'global';
  return range === 'linkLocal' || range === 'unspecified' || range === 'broadcast' ? 'never' : 'internal';
}

const v4 = (hi: number, lo: number) => ipaddr.fromByteArray([hi >> 8, hi & 255, lo >> 8, lo & 255]) as ipaddr.IPv4;

/**
 * The IPv4 addresses an IPv6 address carries, and the best its own form may reach: mapped
 * and NAT64's well-known prefix (64:ff9b::/96) take the embedded address's reach; 6to4 and
 * Teredo (server and de-obfuscated client) too; IPv4-compatible (::/96), translated
 * (::ffff:0:0:0/96) and the local-use NAT64 prefix (64:ff9b:1::/48, every RFC 6052 position)
 * are internal at best. Undefined when it embeds none.
 */
function embeddedIpv4(a: ipaddr.IPv6): { carried: ipaddr.IPv4[]; atBest: Reach } | undefined {
  const p = a.parts;
  const range = a.range();
  if (range === 'ipv4Mapped' || a.match(ipaddr.parseCIDR('64:ff9b::/96'))) return { carried: [v4(p[6]!, p[7]!)], atBest: 'global' };
  if (range === 'rfc6145') return { carried: [v4(p[6]!, p[7]!)], atBest: 'internal' };
  if (range === 'rfc6052') {
    // 64:ff9b:1::/48 with the IPv4 at bits 48–63 and 72–87 (RFC 6052's /48 layout) or at the end
    // (the /96 layout); the layout not in use reads as zeros.
    const carried = [v4(p[3]!, ((p[4]! & 0xff) << 8) | (p[5]! >> 8)), v4(p[6]!, p[7]!)];
    return { carried: carried.filter((x) => x.toString() !== '0.0.0.0'), atBest: 'internal' };
  }
  if (range === '6to4') return { carried: [v4(p[1]!, p[2]!)], atBest: 'global' };
  if (range === 'teredo') return { carried: [v4(p[2]!, p[3]!), v4(~p[6]! & 0xffff, ~p[7]! & 0xffff)], atBest: 'global' };
  if (p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7]! > 1)) return { carried: [v4(p[6]!, p[7]!)], atBest: 'internal' };
  return undefined;
}

function reachOf(address: string): Reach {
  const parsed = ipaddr.parse(address.replace(/%.*$/, ''));
  if (parsed.kind() === 'ipv4') return reachOfIpv4(parsed as ipaddr.IPv4);
  const a = parsed as ipaddr.IPv6;
  if (a.toNormalizedString() === METADATA_V6.toNormalizedString()) return 'never';
  const embedded = embeddedIpv4(a);
  if (embedded) return worst(embedded.atBest, ...embedded.carried.map(reachOfIpv4));
  const range = a.range();
  if (range === 'linkLocal' || range === 'unspecified') return 'never';
  return range === 'unicast' && a.match(GLOBAL_UNICAST_V6) ? 'global' : 'internal';
}

export interface GuardOptions {
  allowPrivateNetworks: boolean;
}

/**
 * Throws when connecting to `address` is not allowed: the one address rule of every outgoing
 * request (imports, webhooks, validation hooks, a pipeline's calls).
 */
export function assertAllowedAddress(raw: string, opts: GuardOptions): void {
  if (!ipaddr.isValid(raw.replace(/%.*$/, ''))) throw new DisallowedUrlError('the host resolves to an address that is not one');
  const reach = reachOf(raw);
  if (reach === 'never')
    throw new DisallowedUrlError('the host resolves to an address that is never allowed (link-local or metadata service)');
  if (reach === 'internal' && !opts.allowPrivateNetworks)
    throw new DisallowedUrlError('the host resolves to a private or internal address');
}

/** Parses an outgoing URL and checks what its text says (scheme, no credentials); its host is checked apart. */
export function parseOutgoingUrl(raw: string): URL {
  const url = URL.parse(raw);
  if (!url) throw new DisallowedUrlError('not a valid absolute URL');
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DisallowedUrlError('only http and https URLs are allowed');
  if (url.username || url.password) throw new DisallowedUrlError('URLs with credentials are not allowed');
  return url;
}

/** Parses and checks a webhook URL (scheme, no credentials, every resolved address allowed). */
export async function assertDeliverableUrl(raw: string, opts: GuardOptions & { resolve?: Resolver }): Promise<URL> {
  const url = parseOutgoingUrl(raw);
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
