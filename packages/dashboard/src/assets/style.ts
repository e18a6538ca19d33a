/**
 * The dashboard's one style sheet, served by the handler at `assets/dashboard.css` (the
 * Content-Security-Policy allows styles from the handler only: no inline `style`).
 *
 * @module
 */

/** The style sheet's text. */
export const DASHBOARD_CSS = `
:root {
  --bg: #f6f7f9; --panel: #fff; --ink: #1d2330; --muted: #667085; --line: #e3e6eb;
  --accent: #2f5bd3; --accent-ink: #fff; --danger: #b42318; --ok: #1a7f4b; --warn: #9a6700;
  --mono: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  color-scheme: light;
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
html { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink); background: var(--bg); }
body { margin: 0; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
header.top { display: flex; align-items: center; gap: 16px; padding: 10px 24px; background: #141a26; color: #e8ebf2; }
header.top a { color: #e8ebf2; }
header.top .brand { font-weight: 650; letter-spacing: .2px; }
header.top nav { display: flex; gap: 14px; flex-wrap: wrap; }
header.top .user { margin-left: auto; color: #aab3c5; font-size: 13px; }
main { max-width: 1200px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 20px; margin: 4px 0 14px; display: flex; align-items: center; gap: 10px; }
h1 form button { font-size: 13px; font-weight: 500; }
h2 { font-size: 15px; margin: 22px 0 8px; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin-bottom: 16px; }
.muted { color: var(--muted); }
.mono, code, pre { font-family: var(--mono); font-size: 12.5px; }
pre { background: #f1f3f6; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; overflow: auto; max-height: 420px; margin: 0; white-space: pre-wrap; word-break: break-word; }
table.grid { width: 100%; border-collapse: collapse; }
table.grid th, table.grid td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
table.grid th { font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .4px; }
table.grid td.num, table.grid th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.grid tr:last-child td { border-bottom: 0; }
table.grid td.preview { max-width: 520px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px; margin-bottom: 16px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .4px; }
.card .value { font-size: 24px; font-weight: 650; font-variant-numeric: tabular-nums; }
.card.dead .value { color: var(--danger); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600; background: #eef1f6; color: var(--muted); }
.badge.paused { background: #fff4d6; color: var(--warn); }
.badge.due { background: #e7efff; color: var(--accent); }
.badge.inWork { background: #e6f6ee; color: var(--ok); }
.badge.dead { background: #fde8e6; color: var(--danger); }
.tabs { display: flex; gap: 4px; border-bottom: 1px solid var(--line); margin-bottom: 12px; flex-wrap: wrap; }
.tabs a { padding: 7px 12px; border-bottom: 2px solid transparent; color: var(--muted); }
.tabs a.current { color: var(--ink); border-bottom-color: var(--accent); font-weight: 600; }
.tabs a .count { margin-left: 4px; font-variant-numeric: tabular-nums; }
form.inline { display: inline; }
.toolbar { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; margin-bottom: 10px; }
.toolbar .grow { flex: 1; }
input[type=search], input[type=text], select { font: inherit; padding: 6px 9px; border: 1px solid #cdd2da; border-radius: 6px; background: #fff; min-width: 220px; }
button { font: inherit; padding: 6px 12px; border-radius: 6px; border: 1px solid #cdd2da; background: #fff; color: var(--ink); cursor: pointer; }
button:hover { border-color: #98a2b3; }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-ink); }
button.danger { color: var(--danger); border-color: #f1b7b1; }
button:disabled { opacity: .5; cursor: default; }
.flash { padding: 9px 12px; border-radius: 6px; margin-bottom: 14px; background: #e6f6ee; color: var(--ok); border: 1px solid #b7e4cb; }
.flash.error { background: #fde8e6; color: var(--danger); border-color: #f1b7b1; }
dl.detail { display: grid; grid-template-columns: 160px 1fr; gap: 6px 16px; margin: 0; }
dl.detail dt { color: var(--muted); }
dl.detail dd { margin: 0; }
.chart svg { width: 100%; height: 90px; display: block; }
.chart rect { fill: #9fb6ee; }
.chart rect.dead { fill: #f0a39b; }
.chart .scale { font-size: 11px; color: var(--muted); margin: 0 0 2px; }
.progress { height: 10px; border-radius: 999px; background: #eef1f6; overflow: hidden; width: 100%; }
.progress progress { width: 100%; }
progress { width: 100%; height: 12px; accent-color: var(--accent); }
.pager { display: flex; justify-content: flex-end; gap: 8px; margin-top: 10px; }
.empty { padding: 24px; text-align: center; color: var(--muted); }
footer { color: var(--muted); font-size: 12px; margin-top: 24px; }
`;
