// Starts Versity S3 Gateway (posix back-end) on loopback: a real S3 server for tests,
// benchmarks and chaos runs.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { toolPath } from '../../src/devstack/tools';
import { startProcess, waitUntil, type ManagedProcess } from '../../src/devstack/process';
import { S3Store } from '../../src/storage/s3-store';

export interface VersityOptions {
  port: number;
  dir: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Keep connections open between requests (default true); the bench compares without. */
  keepAlive?: boolean;
}

export interface Versity {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  process: ManagedProcess;
  stop(): Promise<void>;
}

export async function startVersity(opts: VersityOptions): Promise<Versity> {
  const accessKeyId = opts.accessKeyId ?? 'oncely-test';
  const secretAccessKey = opts.secretAccessKey ?? 'oncely-test-secret';
  const dataDir = path.join(opts.dir, 'data');
  const iamDir = path.join(opts.dir, 'iam');
  const metaDir = path.join(opts.dir, 'meta');
  for (const d of [dataDir, iamDir, metaDir]) mkdirSync(d, { recursive: true });
  const endpoint = `http://127.0.0.1:${opts.port}`;
  const proc = startProcess(
    toolPath('versitygw'),
    [
      '--port',
      `127.0.0.1:${opts.port}`,
      '--access',
      accessKeyId,
      '--secret',
      secretAccessKey,
      '--region',
      'us-east-1',
      '--iam-dir',
      iamDir,
      '--health',
      '/health',
      '--quiet',
      // S3 services keep connections open; versitygw closes each one unless told otherwise,
      // which would charge every request a TCP connect that production does not pay.
      ...(opts.keepAlive === false ? [] : ['--keep-alive']),
      'posix',
      // A sidecar directory keeps metadata off extended attributes, which not every
      // filesystem (overlay, tmpfs) supports.
      '--sidecar',
      metaDir,
      dataDir,
    ],
    { logFile: path.join(opts.dir, 'versitygw.log') },
  );
  await waitUntil('versitygw', async () => (await fetch(`${endpoint}/health`)).ok, { proc, timeoutMs: 30_000 });
  return { endpoint, accessKeyId, secretAccessKey, process: proc, stop: () => proc.stop() };
}

/** A bucket on an S3 server (created when missing), as a store with the given credentials (parts of 5 MiB unless said). */
export async function versityBucket(
  server: { endpoint: string; accessKeyId: string; secretAccessKey: string },
  bucket: string,
  partSizeBytes = 5 * 1024 * 1024,
): Promise<S3Store> {
  const store = new S3Store({
    endpoint: server.endpoint,
    bucket,
    region: 'us-east-1',
    forcePathStyle: true,
    accessKeyId: server.accessKeyId,
    secretAccessKey: server.secretAccessKey,
    partSizeBytes,
    queueSize: 2,
  });
  await store.ensureBucket();
  return store;
}
