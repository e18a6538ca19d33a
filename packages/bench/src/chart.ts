/**
 * Draws the throughput results as an SVG bar chart (no external service): one panel per
 * database, a group of bars per worker count, one bar per queue, labelled with its jobs/s and,
 * for rowclaim's bars, the ratio to the reference queue of that database.
 *
 * @module
 */

/** One bar: a queue at a worker count. */
export interface ChartBar {
  readonly id: string;
  readonly label: string;
  readonly value: number;
  /** The text after the bar. Default: the value as jobs/s. */
  readonly text?: string;
}

/** One panel: a database, its groups of bars by worker count. */
export interface ChartPanel {
  readonly title: string;
  readonly groups: readonly { readonly title: string; readonly bars: readonly ChartBar[] }[];
}

function escapeXml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

function colour(id: string): string {
  if (id.startsWith("rowclaim") && id.includes("-prefetch-")) return "#173f8a";
  if (id.startsWith("rowclaim")) return "#2f6fdf";
  if (id.startsWith("graphile")) return "#e07b24";
  if (id.startsWith("pg-boss")) return "#3a9a5b";
  if (id.startsWith("plainjob")) return "#8a4fc7";
  return "#777777";
}

/**
 * The SVG text of a chart with `title`, `subtitle` and `panels`. With `marker`, every panel draws
 * a dashed line at that value (1.0 on a chart of ratios) and scales to at least it.
 */
export function renderChart(
  title: string,
  subtitle: string,
  panels: readonly ChartPanel[],
  marker?: { readonly value: number; readonly label: string },
): string {
  const width = 1000;
  // Wide enough for the longest label at 12 px (about 6.6 px a character).
  const longest = Math.max(
    0,
    ...panels.flatMap((panel) => panel.groups.flatMap((group) => group.bars.map((bar) => bar.label.length))),
  );
  const labelWidth = Math.max(190, Math.ceil(longest * 6.6) + 10);
  const valueWidth = 300;
  const barArea = width - labelWidth - valueWidth - 30;
  const barHeight = 18;
  const gap = 6;
  const lines: string[] = [];
  let y = 30;
  lines.push(`<text x="20" y="${y}" font-size="18" font-weight="bold">${escapeXml(title)}</text>`);
  y += 20;
  lines.push(`<text x="20" y="${y}" font-size="12" fill="#555">${escapeXml(subtitle)}</text>`);
  y += 18;
  for (const panel of panels) {
    const max = Math.max(
      1e-9,
      marker?.value ?? 0,
      ...panel.groups.flatMap((group) => group.bars.map((bar) => bar.value)),
    );
    y += 22;
    const top = y + 8;
    lines.push(`<text x="20" y="${y}" font-size="15" font-weight="bold">${escapeXml(panel.title)}</text>`);
    for (const group of panel.groups) {
      y += 22;
      lines.push(`<text x="20" y="${y}" font-size="13" fill="#333">${escapeXml(group.title)}</text>`);
      y += 8;
      for (const bar of group.bars) {
        const length = Math.max(1, Math.round((bar.value / max) * barArea));
        lines.push(
          `<text x="${labelWidth + 10}" y="${y + barHeight - 5}" font-size="12" text-anchor="end">${escapeXml(bar.label)}</text>`,
          `<rect x="${labelWidth + 20}" y="${y}" width="${length}" height="${barHeight}" fill="${colour(bar.id)}"/>`,
          `<text x="${labelWidth + 26 + length}" y="${y + barHeight - 5}" font-size="12">${escapeXml(
            bar.text ?? `${Math.round(bar.value).toLocaleString("en-US")} jobs/s`,
          )}</text>`,
        );
        y += barHeight + gap;
      }
    }
    if (marker !== undefined) {
      const x = labelWidth + 20 + Math.round((marker.value / max) * barArea);
      lines.push(
        `<line x1="${x}" y1="${top}" x2="${x}" y2="${y}" stroke="#c62828" stroke-width="1.5" stroke-dasharray="5,4"/>`,
        `<text x="${x + 4}" y="${top + 2}" font-size="11" fill="#c62828">${escapeXml(marker.label)}</text>`,
      );
    }
    y += 6;
  }
  y += 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="Helvetica, Arial, sans-serif" role="img">`,
    `<title>${escapeXml(`${title}. ${subtitle}`)}</title>`,
    `<rect width="${width}" height="${y}" fill="#ffffff"/>`,
    ...lines,
    "</svg>",
    "",
  ].join("\n");
}
