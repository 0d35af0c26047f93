// Webhook targets must be http(s) and, unless private networks are allowed, must not
// resolve to loopback, private, link-local (cloud metadata) or otherwise internal
// addresses. Checked when an endpoint is created and again before each delivery, since
// DNS can change in between.
import { lookup } from 'node:dns/promises';
import net from 'node:net';

export class DisallowedUrlError extends Error {}

const blockList = new net.BlockList();
for (const [addr, prefix] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
  blockList.addSubnet(addr, prefix, 'ipv4');
}
for (const [addr, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) {
  blockList.addSubnet(addr, prefix, 'ipv6');
}
/** Never allowed, even with private networks allowed: link-local holds cloud metadata services. */
const alwaysBlocked = new net.BlockList();
alwaysBlocked.addSubnet('169.254.0.0', 16, 'ipv4');
alwaysBlocked.addSubnet('fe80::', 10, 'ipv6');
alwaysBlocked.addAddress('0.0.0.0', 'ipv4');

export async function assertDeliverableUrl(raw: string, opts: { allowPrivateNetworks: boolean }): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DisallowedUrlError('not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DisallowedUrlError('only http and https URLs are allowed');
  if (url.username || url.password) throw new DisallowedUrlError('URLs with credentials are not allowed');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: { address: string; family: number }[];
  if (net.isIP(host)) addresses = [{ address: host, family: net.isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true });
    } catch {
      throw new DisallowedUrlError(`host ${host} does not resolve`);
    }
  }
  for (const { address, family } of addresses) {
    const type = family === 6 ? 'ipv6' : 'ipv4';
    if (alwaysBlocked.check(address, type)) throw new DisallowedUrlError(`address ${address} is not allowed`);
    if (!opts.allowPrivateNetworks && blockList.check(address, type)) throw new DisallowedUrlError(`address ${address} is private or internal`);
  }
  return url;
}
