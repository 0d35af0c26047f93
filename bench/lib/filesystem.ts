// What the S3 server's data directory sits on. versitygw's posix back end completes a
// multipart upload by copy_file_range-ing the parts into the object: a real copy on ext4, a
// clone of extents on a filesystem with reflinks (XFS, btrfs), which is how S3 services
// complete one (no byte copied).
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export function describeFilesystem(dir: string): { filesystem: string; reflinks: boolean } {
  const filesystem = execFileSync('findmnt', ['-n', '-o', 'FSTYPE', '--target', dir], { encoding: 'utf8' }).trim();
  const probe = path.join(dir, '.reflink-probe');
  writeFileSync(probe, 'probe');
  let reflinks = true;
  try {
    execFileSync('cp', ['--reflink=always', probe, `${probe}-clone`], { stdio: 'ignore' });
  } catch {
    reflinks = false;
  } finally {
    rmSync(probe, { force: true });
    rmSync(`${probe}-clone`, { force: true });
  }
  return { filesystem, reflinks };
}
