// CPU seconds per component, read from /proc: user + system time of each process (the API,
// the worker, the Temporal server, the S3 server) and of every PostgreSQL process (the
// machine's cluster: the postmaster and its backends). Two snapshots around a load phase,
// divided by the operations it completed, give the cost of one operation per component —
// a far steadier figure than requests per second on a shared VM.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export type Component = 'api' | 'worker' | 'temporal' | 's3' | 'postgres';
export type CpuSnapshot = Record<Component, number>;

/**
 * utime + stime of one process, in seconds (0 once it is gone); with `reaped`, also the
 * time of its children that exited (cutime + cstime).
 */
function processCpuSeconds(pid: number | undefined, reaped = false): number {
  if (!pid) return 0;
  try {
    return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'), reaped);
  } catch {
    return 0;
  }
}

/** utime + stime (and, `reaped`, cutime + cstime) of a /proc stat line, in seconds. */
function statCpuSeconds(stat: string, reaped = false): number {
  // Fields after the command name, which is in parentheses and may contain spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const own = Number(fields[11]) + Number(fields[12]);
  return (reaped ? own + Number(fields[13]) + Number(fields[14]) : own) / TICKS_PER_SECOND;
}

/** CPU seconds of a process's threads by name, digits folded ("tokio-runtime-w", "V# Worker"). */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+/g, '#');
      out.set(name, (out.get(name) ?? 0) + statCpuSeconds(stat));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/**
 * Every PostgreSQL process's CPU. A backend that exits between two snapshots would take its
 * time with it (negative figures for clients that close connections), so the postmaster's
 * reaped children's time is counted too: the postmaster is the postgres process whose parent
 * is not one.
 */
function postgresCpuSeconds(): number {
  const postgres = new Set<number>();
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      postgres.add(Number(entry));
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  for (const pid of postgres) total += processCpuSeconds(pid, !postgres.has(parents.get(pid)!));
  return total;
}

export function cpuSnapshot(pids: Partial<Record<Exclude<Component, 'postgres'>, number>>): CpuSnapshot {
  return {
    api: processCpuSeconds(pids.api),
    worker: processCpuSeconds(pids.worker),
    temporal: processCpuSeconds(pids.temporal),
    s3: processCpuSeconds(pids.s3),
    postgres: postgresCpuSeconds(),
  };
}

/** Milliseconds of CPU per operation, per component and in all, between two snapshots. */
export function cpuMsPerOp(before: CpuSnapshot, after: CpuSnapshot, ops: number): Record<Component | 'total', number> {
  const per = (c: Component) => Math.round(((after[c] - before[c]) * 1000 * 10) / Math.max(1, ops)) / 10;
  const out = { api: per('api'), worker: per('worker'), temporal: per('temporal'), s3: per('s3'), postgres: per('postgres') };
  return { ...out, total: Math.round((out.api + out.worker + out.temporal + out.s3 + out.postgres) * 10) / 10 };
}

/** CPU per operation of what `run` does: `run` returns how many operations it completed. */
export async function measureCpu(
  pids: Partial<Record<Exclude<Component, 'postgres'>, number>>,
  run: () => Promise<number>,
): Promise<Record<Component | 'total', number>> {
  const before = cpuSnapshot(pids);
  const ops = await run();
  return cpuMsPerOp(before, cpuSnapshot(pids), ops);
}

/** The median of each component over rounds. */
export function medianCpu(records: Record<string, number>[]): Record<string, number> {
  const keys = Object.keys(records[0] ?? {});
  return Object.fromEntries(keys.map((k) => [k, records.map((r) => r[k]!).sort((a, b) => a - b)[Math.floor(records.length / 2)]!]));
}
