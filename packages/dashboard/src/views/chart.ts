/**
 * The throughput chart: an SVG of bars drawn on the server (attributes, not styles, so the
 * Content-Security-Policy's `style-src` needs no exception).
 *
 * @module
 */
import type { ThroughputPoint } from "../counts-cache.js";
import { html, type SafeHtml } from "../html.js";

/** Bars of rows done per minute between the kept samples, newest on the right. */
export function throughputChart(points: readonly ThroughputPoint[]): SafeHtml {
  if (points.length === 0)
    return html`<p class="muted">Throughput appears once the counts have been read twice (it is the difference between reads).</p>`;
  const width = 600;
  const height = 80;
  const shown = points.slice(-60);
  const rates = shown.map((point) => (point.ms > 0 ? (point.done * 60_000) / point.ms : 0));
  const max = Math.max(1, ...rates);
  const barWidth = width / 60;
  const offset = width - shown.length * barWidth;
  const bars = shown.map((point, index) => {
    const rate = rates[index] ?? 0;
    const barHeight = Math.max(rate > 0 ? 1 : 0, Math.round((rate / max) * (height - 12)));
    const x = (offset + index * barWidth).toFixed(1);
    return html`<rect x="${x}" y="${height - barHeight}" width="${(barWidth - 1).toFixed(1)}" height="${barHeight}"${point.dead > 0 ? html` class="dead"` : ""}><title>${Math.round(rate)}/min at ${point.at.toISOString()}${point.dead > 0 ? `, ${point.dead} dead` : ""}</title></rect>`;
  });
  const latest = rates[rates.length - 1] ?? 0;
  return html`<p class="scale">peak ${Math.round(max)} rows/min</p><svg viewBox="0 0 ${width} ${height}" preserveAspectRatio="none" role="img" aria-label="rows done per minute">
${bars}
</svg>
<p class="muted">Now about <strong data-throughput>${Math.round(latest)}</strong> rows a minute (between the last two reads of the counts).</p>`;
}
