// A small SVG bar chart of each scenario's ratio against its baseline, with the target
// marked. Hand-written: a dozen shapes do not justify a charting dependency.
// Targets by scenario (its name's start) and ratio: #25's (large 0.9× PutObject, tus 0.8× one
// request, replay 1× the bare route and 2× the durable peer, new uploads 1× bare Temporal and
// 0.5× the durable peer) and the older ones; the pg-only table has none.
const targets: Record<string, Record<string, number>> = {
  'large upload': { ratio: 0.9 },
  resumable: { ratio: 0.8, tusOnePatchRatio: 0.8 },
  'replay path': { ratio: 1, ratioUncached: 0.6, ratioVsDurable: 2 },
  'new small uploads': { ratioVsBareTemporal: 1, ratioVsDurable: 0.5 },
};
const targetOf = (scenario: string, key: string): number | undefined =>
  Object.entries(targets).find(([name]) => scenario.startsWith(name))?.[1][key] ?? (key === 'ratio' ? 1 : undefined);

export function ratioChart(results: Record<string, unknown>[]): string {
  const bars: { label: string; value: number; target?: number }[] = [];
  for (const r of results) {
    for (const [k, v] of Object.entries(r)) {
      if (!(k.startsWith('ratio') || k.endsWith('Ratio')) || typeof v !== 'number') continue;
      const target = targetOf(String(r.scenario), k);
      const variant = k.replace('ratioVs', 'vs ').replace('ratioUncached', 'cache off').replace('tusOnePatchRatio', 'tus, one PATCH');
      bars.push({
        label: `${r.scenario}${k === 'ratio' ? '' : ` (${variant})`}`,
        value: v,
        target,
      });
    }
  }
  const width = 760;
  const rowH = 34;
  const left = 300;
  // Latency speed-ups can be two orders of magnitude; longer bars are clipped (the label
  // keeps the value) so the throughput ratios around 1 stay readable.
  const axisMax = Math.min(4, Math.max(1.2, ...bars.map((b) => b.value)));
  const scale = (width - left - 60) / axisMax;
  const rows = bars.map((b, i) => {
    const y = 30 + i * rowH;
    const t = b.target
      ? `<line x1="${left + b.target * scale}" x2="${left + b.target * scale}" y1="${y - 4}" y2="${y + 22}" stroke="#c00" stroke-dasharray="3,2"/>`
      : '';
    return `<text x="${left - 8}" y="${y + 14}" text-anchor="end" font-size="12">${escape(b.label)}</text>
<rect x="${left}" y="${y}" width="${Math.min(b.value, axisMax) * scale}" height="18" fill="${b.target && b.value < b.target ? '#d98' : '#6a9'}"/>
<text x="${left + Math.min(b.value, axisMax) * scale + 6}" y="${y + 14}" font-size="12">${b.value.toFixed(2)}×</text>${t}`;
  });
  // Second panel: CPU per operation (ms, all components), stacked by component.
  const cpuBars: { label: string; parts: [string, number][] }[] = [];
  for (const r of results) {
    for (const [k, v] of Object.entries(r)) {
      if (!k.toLowerCase().includes('cpums') || typeof v !== 'string') continue;
      const parsed = JSON.parse(v) as Record<string, unknown>;
      // Per-mode breakdowns (an object per mode) have no one bar.
      if (!Object.values(parsed).every((x) => typeof x === 'number')) continue;
      cpuBars.push({
        label: `${r.scenario} (${k.replace(/^cpuMsPer/, 'per ').replace(/^tusCpuMsPer/, 'tus, per ')})`,
        parts: (Object.entries(parsed) as [string, number][]).filter(([c]) => c !== 'total'),
      });
    }
  }
  const top = 50 + bars.length * rowH;
  const cpuMax = Math.max(1, ...cpuBars.map((b) => b.parts.reduce((n, [, x]) => n + x, 0)));
  const cpuScale = (width - left - 90) / cpuMax;
  const colours: Record<string, string> = { api: '#4a7', worker: '#47a', temporal: '#a74', s3: '#999', postgres: '#a4a' };
  const cpuRows = cpuBars.map((b, i) => {
    const y = top + 30 + i * rowH;
    let x = left;
    const segs = b.parts.map(([c, ms]) => {
      const w = ms * cpuScale;
      const seg = `<rect x="${x}" y="${y}" width="${w}" height="18" fill="${colours[c] ?? '#777'}"><title>${c} ${ms} ms</title></rect>`;
      x += w;
      return seg;
    });
    const total = b.parts.reduce((n, [, ms]) => n + ms, 0);
    return `<text x="${left - 8}" y="${y + 14}" text-anchor="end" font-size="12">${escape(b.label)}</text>${segs.join('')}<text x="${x + 6}" y="${y + 14}" font-size="12">${total.toFixed(1)} ms</text>`;
  });
  const legend = Object.entries(colours).map(
    ([c, col], i) =>
      `<rect x="${left + i * 90}" y="${top + 8}" width="10" height="10" fill="${col}"/><text x="${left + i * 90 + 14}" y="${top + 17}" font-size="11">${c}</text>`,
  );
  const height = top + (cpuBars.length ? 40 + cpuBars.length * rowH : 0);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">
<text x="10" y="18" font-size="14" font-weight="bold">Oncely ÷ baseline (same run; dashed red = target)</text>
<line x1="${left + scale}" x2="${left + scale}" y1="24" y2="${top - 10}" stroke="#888"/>
${rows.join('\n')}
${cpuBars.length ? `<text x="10" y="${top + 18}" font-size="14" font-weight="bold">CPU ms per operation</text>${legend.join('')}` : ''}
${cpuRows.join('\n')}
</svg>
`;
}

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
