/**
 * The frame of every page: header with the tables, the user and their role, one style sheet
 * and one script from the handler itself (nothing inline, nothing from another host).
 *
 * @module
 */
import type { DashboardUser } from "../auth.js";
import { html, type SafeHtml } from "../html.js";

/** What every page knows about the request it answers. */
export interface PageContext {
  /** The mount's base path, without a trailing slash (`""` at the root). */
  readonly base: string;
  readonly user: DashboardUser;
  /** The CSRF token the page's forms carry. */
  readonly csrf: string;
  /** The dashboard's title. */
  readonly title: string;
  /** The names of the tables, for the navigation. */
  readonly tables: readonly string[];
  /** A message to show once (after an action), if any. */
  readonly flash?: { readonly text: string; readonly error: boolean } | undefined;
}

/** A full page around `body`. `refreshSeconds` adds a meta refresh (for pages that follow progress without script). */
export function layout(
  context: PageContext,
  heading: string,
  body: SafeHtml,
  options: { refreshSeconds?: number } = {},
): SafeHtml {
  const { base } = context;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="rowclaim-csrf" content="${context.csrf}">
${options.refreshSeconds === undefined ? "" : html`<meta http-equiv="refresh" content="${options.refreshSeconds}">`}
<title>${heading} · ${context.title}</title>
<link rel="stylesheet" href="${base}/assets/dashboard.css">
<script src="${base}/assets/dashboard.js" defer></script>
</head>
<body>
<header class="top">
<a class="brand" href="${base}/">${context.title}</a>
<nav>${context.tables.map((name) => html`<a href="${base}/tables/${encodeURIComponent(name)}">${name}</a>`)}</nav>
<span class="user">${context.user.name} · ${context.user.role === "admin" ? "admin" : "read-only"}</span>
</header>
<main>
${
  context.flash === undefined
    ? ""
    : html`<div class="flash${context.flash.error ? " error" : ""}" role="status">${context.flash.text}</div>`
}
${body}
<footer>rowclaim dashboard</footer>
</main>
</body>
</html>
`;
}

/** A hidden CSRF field for a form. */
export function csrfField(context: PageContext): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${context.csrf}">`;
}

/** Whether the user may act (admin role). */
export function canAct(context: PageContext): boolean {
  return context.user.role === "admin";
}
