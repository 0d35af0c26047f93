// A small SVG bar chart of each scenario's ratio against its baseline, with the target
// marked. Hand-written: a dozen shapes do not justify a charting dependency.
const targets: Record<string, number> = { ratio: 1, ratioUncached: 0.6, ratioVsBareTemporal: 0.5, ratioVsPgOnly: 1 };
const targetByScenario: Record<string, number> = { 'large upload': 0.8, 'replay path': 0.6, 'new small uploads (4 KiB)': 0.5 };

export function ratioChart(results: Record<string, unknown>[]): string {
  const bars: { label: string; value: number; target?: number }[] = [];
  for (const r of results) {
    for (const [k, v] of Object.entries(r)) {
      if (!k.startsWith('ratio') || typeof v !== 'number') continue;
      const target = k === 'ratioVsPgOnly' ? undefined : (targetByScenario[String(r.scenario)] ?? targets[k]);
      bars.push({ label: `${r.scenario}${k === 'ratio' ? '' : ` (${k.replace('ratioVs', 'vs ').replace('ratioUncached', 'cache off')})`}`, value: v, target });
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
    const t = b.target ? `<line x1="${left + b.target * scale}" x2="${left + b.target * scale}" y1="${y - 4}" y2="${y + 22}" stroke="#c00" stroke-dasharray="3,2"/>` : '';
    return `<text x="${left - 8}" y="${y + 14}" text-anchor="end" font-size="12">${escape(b.label)}</text>
<rect x="${left}" y="${y}" width="${Math.min(b.value, axisMax) * scale}" height="18" fill="${b.target && b.value < b.target ? '#d98' : '#6a9'}"/>
<text x="${left + Math.min(b.value, axisMax) * scale + 6}" y="${y + 14}" font-size="12">${b.value.toFixed(2)}×</text>${t}`;
  });
  const height = 50 + bars.length * rowH;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">
<text x="10" y="18" font-size="14" font-weight="bold">Oncely ÷ baseline (same run; dashed red = target)</text>
<line x1="${left + scale}" x2="${left + scale}" y1="24" y2="${height - 10}" stroke="#888"/>
${rows.join('\n')}
</svg>
`;
}

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
