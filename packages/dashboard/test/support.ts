// Requests to the dashboard handler as a browser would send them: with basic credentials, the
// CSRF token taken from a page, same-origin headers.
import type { Dashboard } from "../src/index.js";

/** The origin the handler tests send requests to. */
export const ORIGIN = "http://dashboard.test";

/** Basic credentials of `user` and `password`, as an Authorization header. */
export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
}

/** A GET as a signed-in user. */
export function get(dashboard: Dashboard, path: string, authorization?: string): Promise<Response> {
  return dashboard(
    new Request(`${ORIGIN}${path}`, { headers: authorization === undefined ? {} : { authorization } }),
  );
}

/** The CSRF token of a page (its forms carry it, and a meta tag for the script). */
export function tokenOf(page: string): string {
  const match = /<meta name="rowclaim-csrf" content="([^"]+)">/.exec(page);
  if (match?.[1] === undefined) throw new Error("the page has no CSRF token");
  return match[1];
}

/** A form POST, same-origin unless `headers` say otherwise. */
export function post(
  dashboard: Dashboard,
  path: string,
  fields: Record<string, string | readonly string[]>,
  authorization: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value === "string") form.append(name, value);
    else for (const item of value) form.append(name, item);
  }
  return dashboard(
    new Request(`${ORIGIN}${path}`, {
      method: "POST",
      headers: {
        authorization,
        "content-type": "application/x-www-form-urlencoded",
        origin: ORIGIN,
        "sec-fetch-site": "same-origin",
        ...headers,
      },
      body: form.toString(),
    }),
  );
}

/** Resolves once `probe` returns a truthy value, checking every 25 ms; fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 20_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
