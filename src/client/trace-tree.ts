// `oncely trace UPLOAD_ID`: an upload's trace, read from a trace backend's query API as OTLP
// JSON (Jaeger's /api/v3/traces/{id}), printed as an indented tree of spans with their
// durations and where each ran — what an operator reads first when an upload is slow or stuck.

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpSpan {
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  status?: { code?: number | string };
  attributes?: { key: string; value: OtlpValue }[];
}
export interface OtlpTrace {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: OtlpValue }[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

export interface TraceSpan {
  id: string;
  parentId: string | null;
  name: string;
  /** Where it ran: the resource's oncely.role (api, worker, all) or service.name. */
  where: string;
  startMs: number;
  durationMs: number;
  error: boolean;
}

/** Ids as hex whether the JSON carries them as hex or base64 (OTLP/JSON says hex; gateways vary). */
function hexId(id: string | undefined): string | null {
  if (!id) return null;
  if (/^[0-9a-f]+$/i.test(id)) return id.toLowerCase();
  return Buffer.from(id, 'base64').toString('hex') || null;
}

const text = (v: OtlpValue | undefined) => (v?.stringValue ?? (v?.intValue !== undefined ? String(v.intValue) : undefined)) || undefined;

export function spansOf(trace: OtlpTrace): TraceSpan[] {
  const out: TraceSpan[] = [];
  for (const rs of trace.resourceSpans ?? []) {
    const attr = (k: string) => text(rs.resource?.attributes?.find((a) => a.key === k)?.value);
    const where = attr('oncely.role') ?? attr('service.name') ?? '?';
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const start = Number(BigInt(s.startTimeUnixNano) / 1000n) / 1000;
        const end = Number(BigInt(s.endTimeUnixNano) / 1000n) / 1000;
        const code = s.status?.code;
        out.push({
          id: hexId(s.spanId)!,
          parentId: hexId(s.parentSpanId),
          name: s.name,
          where,
          startMs: start,
          durationMs: end - start,
          error: code === 2 || code === 'STATUS_CODE_ERROR',
        });
      }
    }
  }
  return out;
}

/** The spans as a tree: children under their parent in start order; a span whose parent is not in the trace is a root. */
export function renderTraceTree(spans: TraceSpan[]): string {
  const ids = new Set(spans.map((s) => s.id));
  const children = new Map<string | null, TraceSpan[]>();
  for (const s of spans) {
    const parent = s.parentId && ids.has(s.parentId) ? s.parentId : null;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  for (const list of children.values()) list.sort((a, b) => a.startMs - b.startMs);
  const t0 = Math.min(...spans.map((s) => s.startMs));
  const lines: string[] = [];
  const walk = (parent: string | null, depth: number) => {
    for (const s of children.get(parent) ?? []) {
      const label = `${'  '.repeat(depth)}${s.name}${s.error ? '  !error' : ''}`;
      lines.push(`${label.padEnd(64)} ${duration(s.durationMs).padStart(9)}  +${duration(s.startMs - t0).padEnd(9)} ${s.where}`);
      walk(s.id, depth + 1);
    }
  };
  walk(null, 0);
  return lines.join('\n');
}

function duration(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  return `${ms.toFixed(ms < 10 ? 2 : 1)} ms`;
}

/** Reads a trace from a Jaeger v2 query API (OTLP JSON); undefined when the backend does not have it (yet). */
export async function fetchTrace(queryUrl: string, traceId: string): Promise<OtlpTrace | undefined> {
  const res = await fetch(`${queryUrl.replace(/\/$/, '')}/api/v3/traces/${traceId}`, { signal: AbortSignal.timeout(10_000) });
  if (res.status === 404) return undefined;
  if (!res.ok) throw new Error(`the trace backend answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  const body = (await res.json()) as { result?: OtlpTrace };
  return body.result ?? (body as OtlpTrace);
}
