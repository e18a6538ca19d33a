/**
 * Responses with the dashboard's security headers: a strict Content-Security-Policy (scripts,
 * styles and fetches from the handler only; nothing inline), no framing, no sniffing, no
 * caching of pages.
 *
 * @module
 */
import { html, type SafeHtml } from "./html.js";

/** The Content-Security-Policy of every response. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function headers(contentType: string, extra: Record<string, string> = {}): Headers {
  return new Headers({
    "content-type": contentType,
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cache-control": "no-store",
    ...extra,
  });
}

/** An HTML page. */
export function htmlResponse(page: SafeHtml, status = 200, extra: Record<string, string> = {}): Response {
  return new Response(page.text, { status, headers: headers("text/html; charset=utf-8", extra) });
}

/** A JSON answer. */
export function jsonResponse(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), { status, headers: headers("application/json; charset=utf-8") });
}

/** A static file of the handler (the style sheet, the script): cached privately for a while. */
export function assetResponse(text: string, contentType: string): Response {
  return new Response(text, {
    status: 200,
    headers: headers(contentType, { "cache-control": "private, max-age=300" }),
  });
}

/** A redirect after a POST (303: the browser follows with GET). */
export function redirectResponse(location: string): Response {
  return new Response(null, { status: 303, headers: headers("text/plain; charset=utf-8", { location }) });
}

/** A small page for errors and refusals; it needs no style sheet (which may itself be refused). */
export function errorResponse(
  status: number,
  title: string,
  message: string,
  extra: Record<string, string> = {},
): Response {
  const page = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${status} ${title}</title></head>
<body><h1>${status} ${title}</h1><p>${message}</p></body></html>
`;
  return htmlResponse(page, status, extra);
}
