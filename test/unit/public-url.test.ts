// URLs the API hands out for later requests are absolute: PUBLIC_URL (with its path, behind
// a proxy) when configured, else the origin the request came to.
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AppEnv } from '../../src/http/env';
import { absoluteUrl } from '../../src/http/public-url';
import { loadConfig } from '../../src/config';

function answer(publicUrl: string | undefined, path: string, requestUrl: string) {
  const app = new Hono<AppEnv>().get('*', (c) => c.text(absoluteUrl(c, publicUrl, path)));
  return Promise.resolve(app.request(requestUrl)).then((r) => r.text());
}

describe('absoluteUrl', () => {
  it("uses the request's own origin when PUBLIC_URL is unset", async () => {
    expect(await answer(undefined, '/v1/direct-uploads/x/object?expires=1&signature=s', 'http://127.0.0.1:3000/v1/direct-uploads')).toBe(
      'http://127.0.0.1:3000/v1/direct-uploads/x/object?expires=1&signature=s',
    );
  });

  it('uses PUBLIC_URL, keeping its path prefix, with or without a trailing slash', async () => {
    for (const base of ['https://uploads.example.com/oncely', 'https://uploads.example.com/oncely/']) {
      expect(await answer(base, '/v1/x', 'http://10.0.0.5:3000/v1/direct-uploads')).toBe('https://uploads.example.com/oncely/v1/x');
    }
  });

  it('leaves an already absolute URL (a presigned S3 URL) alone', async () => {
    expect(await answer('https://uploads.example.com', 'http://s3.internal/bucket/k?X-Amz-Signature=1', 'http://h/')).toBe(
      'http://s3.internal/bucket/k?X-Amz-Signature=1',
    );
  });

  it('PUBLIC_URL must be an http(s) URL without query or fragment', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://uploads.example.com/base' }).PUBLIC_URL).toBe('https://uploads.example.com/base');
    for (const bad of ['uploads.example.com', 'ftp://x', 'https://x/?a=1', 'https://x/#f'])
      expect(() => loadConfig({ PUBLIC_URL: bad })).toThrow(/PUBLIC_URL/);
  });
});
