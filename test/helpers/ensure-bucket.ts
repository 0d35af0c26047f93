// Run as its own process by the store test: waits for a shared start instant, then runs the
// S3 store's ensureBucket (what API and worker each do at start-up) and reports.
import { S3Store } from '../../src/storage/s3-store';

const [endpoint, bucket, accessKeyId, secretAccessKey, startAt] = process.argv.slice(2) as [string, string, string, string, string];
const store = new S3Store({
  endpoint,
  bucket,
  region: 'us-east-1',
  accessKeyId,
  secretAccessKey,
  forcePathStyle: true,
  partSizeBytes: 5 * 1024 * 1024,
  queueSize: 1,
});
while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
try {
  await store.ensureBucket();
  console.log('ok');
} catch (err) {
  console.log(`failed: ${(err as Error).name}: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  store.destroy();
}
