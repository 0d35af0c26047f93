// The fault catalogue and its schedule. Network faults are Toxiproxy toxics held for a
// few seconds; process faults are real SIGKILLs and restarts. The schedule goes round by
// round: each round applies every fault once, in an order drawn from the seed, so every
// kind is injected equally often and a run is reproducible.
import { setTimeout as sleep } from 'node:timers/promises';
import type { ICreateToxicBody, Proxy } from 'toxiproxy-node-client';
import type { ChaosStack } from './stack';
import type { Rng } from './rng';

export interface Fault {
  kind: string;
  what: string;
  /** Only where Temporal is the real server (its PostgreSQL connections have a proxy). */
  serverOnly?: boolean;
  /** Injects the fault and returns how to heal it (a no-op for a kill that heals itself). */
  inject(stack: ChaosStack, rng: Rng): Promise<() => Promise<void>>;
}

let toxicSeq = 0;
function toxic<T>(pick: (s: ChaosStack) => Proxy, body: (rng: Rng) => Omit<ICreateToxicBody<T>, 'name' | 'toxicity'>) {
  return async (stack: ChaosStack, rng: Rng) => {
    const t = await pick(stack).addToxic<T>({ ...body(rng), name: `chaos-${++toxicSeq}`, toxicity: 1 });
    return async () => {
      await t.remove();
    };
  };
}

/** Latency and connection resets between the services and one of their dependencies. */
function dependencyFaults(proxy: 'postgres' | 's3', label: string, latencyMs: number): Fault[] {
  return [
    {
      kind: `${proxy}-latency`,
      what: `${latencyMs} ± 100 ms on every ${label} round trip (latency)`,
      inject: toxic(
        (s) => s.proxies[proxy],
        () => ({ type: 'latency', stream: 'downstream', attributes: { latency: latencyMs, jitter: 100 } }),
      ),
    },
    {
      kind: `${proxy}-reset`,
      what: `${label} connections reset by peer (reset_peer)`,
      inject: toxic(
        (s) => s.proxies[proxy],
        (rng) => ({ type: 'reset_peer', stream: 'downstream', attributes: { timeout: rng.int(0, 300) } }),
      ),
    },
  ];
}

export const FAULTS: readonly Fault[] = [
  {
    kind: 'api-response-dropped',
    what: 'API answers are held and the connection closed: the server did the work, the client never hears (downstream timeout)',
    inject: toxic(
      (s) => s.proxies.api,
      () => ({ type: 'timeout', stream: 'downstream', attributes: { timeout: 200 } }),
    ),
  },
  {
    kind: 'api-reset-mid-body',
    what: 'client connections to the API cut after a few KiB of the request (upstream limit_data)',
    inject: toxic(
      (s) => s.proxies.api,
      (rng) => ({ type: 'limit_data', stream: 'upstream', attributes: { bytes: rng.int(2_000, 60_000) } }),
    ),
  },
  {
    kind: 'api-slow-body',
    what: 'request bodies trickle in at 16 KB/s with 100 ms latency (upstream bandwidth + latency)',
    inject: async (stack, rng) => {
      const a = await toxic(
        (s) => s.proxies.api,
        () => ({ type: 'bandwidth', stream: 'upstream', attributes: { rate: 16 } }),
      )(stack, rng);
      const b = await toxic(
        (s) => s.proxies.api,
        () => ({ type: 'latency', stream: 'downstream', attributes: { latency: 100, jitter: 50 } }),
      )(stack, rng);
      return async () => {
        await a();
        await b();
      };
    },
  },
  ...dependencyFaults('postgres', 'Postgres', 150),
  ...dependencyFaults('s3', 'S3', 200),
  {
    kind: 'kill-worker',
    what: 'SIGKILL of a worker process, one of the replicas at random (restarted by its supervisor)',
    inject: async (stack, rng) => {
      await stack.workers[rng.int(0, stack.workers.length - 1)]!.kill();
      return async () => {};
    },
  },
  {
    kind: 'kill-api',
    what: 'SIGKILL of an API process, one of the replicas at random (restarted by its supervisor)',
    inject: async (stack, rng) => {
      await stack.apis[rng.int(0, stack.apis.length - 1)]!.kill();
      return async () => {};
    },
  },
  {
    kind: 'restart-temporal',
    what: 'SIGKILL of the Temporal server process (dev server: on its SQLite file; real server: on its PostgreSQL databases), started again',
    inject: async (stack) => {
      await stack.restartTemporal();
      return async () => {};
    },
  },
  {
    kind: 'cut-temporal-postgres',
    what: "the real Temporal server's PostgreSQL connections reset (Toxiproxy reset_peer; real server only)",
    serverOnly: true,
    inject: toxic(
      (s) => s.proxies.temporalPostgres!,
      (rng) => ({ type: 'reset_peer', stream: 'downstream', attributes: { timeout: rng.int(0, 300) } }),
    ),
  },
  {
    kind: 'restart-postgres',
    what: 'SIGKILL of the PostgreSQL server (postmaster and backends), restarted with crash recovery',
    inject: async (stack, rng) => {
      await stack.postgres.crash();
      await sleep(rng.int(200, 1500));
      await stack.postgres.start();
      return async () => {};
    },
  },
  {
    kind: 'restart-s3',
    what: 'SIGKILL of versitygw, restarted on the same directory',
    inject: async (stack) => {
      await stack.restartS3();
      return async () => {};
    },
  },
];

export function faultsByKind(kinds?: string[], opts: { temporalServer?: boolean } = {}): Fault[] {
  const available = FAULTS.filter((f) => opts.temporalServer || !f.serverOnly);
  if (!kinds || kinds.length === 0) return available;
  const unknown = kinds.filter((k) => !available.some((f) => f.kind === k));
  if (unknown.length) throw new Error(`unknown fault kind(s): ${unknown.join(', ')}; known: ${available.map((f) => f.kind).join(', ')}`);
  return available.filter((f) => kinds.includes(f.kind));
}

export interface FaultLog {
  rounds: number;
  counts: Record<string, number>;
  events: { at: number; kind: string; ms: number; error?: string }[];
}

/**
 * Runs whole rounds of faults until `until()` says stop (checked between rounds, so every
 * kind is injected equally often and at least once): each fault held for 1.5–4 s, then
 * healed, then a quiet gap of 0.5–2 s. A fault that fails to inject is logged, not counted.
 */
export async function runFaultSchedule(
  stack: ChaosStack,
  faults: Fault[],
  rng: Rng,
  opts: { until: () => boolean; log: (line: string) => void; startedAt: number },
): Promise<FaultLog> {
  const result: FaultLog = { rounds: 0, counts: Object.fromEntries(faults.map((f) => [f.kind, 0])), events: [] };
  while (!opts.until()) {
    result.rounds++;
    for (const fault of rng.shuffle(faults)) {
      const t0 = Date.now();
      try {
        const heal = await fault.inject(stack, rng);
        await sleep(rng.int(1500, 4000));
        await heal();
        result.counts[fault.kind]!++;
        result.events.push({ at: t0 - opts.startedAt, kind: fault.kind, ms: Date.now() - t0 });
        opts.log(`fault ${fault.kind} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
      } catch (err) {
        result.events.push({ at: t0 - opts.startedAt, kind: fault.kind, ms: Date.now() - t0, error: String(err) });
        opts.log(`fault ${fault.kind} failed to inject: ${String(err)}`);
      }
      await sleep(rng.int(500, 2000));
    }
  }
  return result;
}
