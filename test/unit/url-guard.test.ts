import { describe, expect, it } from 'vitest';
import { assertDeliverableUrl } from '../../src/downstream/url-guard';

describe('webhook URL guard', () => {
  it('allows public http(s) addresses', async () => {
    await expect(assertDeliverableUrl('https://93.184.216.34/hook', { allowPrivateNetworks: false })).resolves.toBeInstanceOf(URL);
    await expect(assertDeliverableUrl('http://[2606:4700::1111]/hook', { allowPrivateNetworks: false })).resolves.toBeInstanceOf(URL);
  });

  it.each(['http://127.0.0.1/x', 'http://localhost/x', 'http://10.1.2.3/x', 'http://192.168.1.1/x', 'http://172.20.0.1/x', 'http://[::1]/x', 'http://[fd00::1]/x'])(
    'refuses private or loopback %s unless private networks are allowed',
    async (url) => {
      await expect(assertDeliverableUrl(url, { allowPrivateNetworks: false })).rejects.toThrow(/private or internal/);
      await expect(assertDeliverableUrl(url, { allowPrivateNetworks: true })).resolves.toBeInstanceOf(URL);
    },
  );

  it.each(['http://169.254.169.254/latest', 'http://[fe80::1]/x', 'http://0.0.0.0/x'])('always refuses %s', async (url) => {
    await expect(assertDeliverableUrl(url, { allowPrivateNetworks: true })).rejects.toThrow(/not allowed/);
  });

  it.each(['ftp://example.com', 'file:///etc/passwd', 'nonsense', 'http://u:p@example.com/'])('refuses %s', async (url) => {
    await expect(assertDeliverableUrl(url, { allowPrivateNetworks: true })).rejects.toThrow();
  });
});
