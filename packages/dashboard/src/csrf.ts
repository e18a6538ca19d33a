/**
 * CSRF protection for every state-changing request: a token bound to the user (their name and
 * session or credential) in each form, checked on POST, and the browser's own signals
 * (`Sec-Fetch-Site`, `Origin`) refused when they say the request came from another site.
 *
 * @module
 */
import type { DashboardUser } from "./auth.js";
import { hmac, timingSafeEqualText } from "./secret.js";

/** The form field that carries the token. */
export const CSRF_FIELD = "_csrf";

/** The token of `user` under `secret`. Stateless: the same user and session always get the same token. */
export function csrfToken(secret: string, user: DashboardUser): Promise<string> {
  return hmac(secret, `csrf\u0000${user.name}\u0000${user.session ?? ""}`);
}

/** Why a state-changing request was refused, or `undefined` when it passes. */
export async function csrfProblem(
  request: Request,
  given: string | undefined,
  secret: string,
  user: DashboardUser,
  allowedOrigins: readonly string[],
): Promise<string | undefined> {
  const site = request.headers.get("sec-fetch-site");
  if (site !== null && site !== "same-origin" && site !== "none")
    return `cross-site request refused (Sec-Fetch-Site: ${site})`;
  const origin = request.headers.get("origin");
  if (origin !== null) {
    const own = new URL(request.url).origin;
    if (origin !== own && !allowedOrigins.includes(origin))
      return `request from another origin refused (${origin})`;
  }
  if (given === undefined || given === "") return "the CSRF token is missing";
  const expected = await csrfToken(secret, user);
  if (!(await timingSafeEqualText(expected, given))) return "the CSRF token does not match";
  return undefined;
}
