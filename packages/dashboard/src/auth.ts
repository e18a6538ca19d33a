/**
 * Who may use the dashboard. Closed by default: with no {@link DashboardAuth} every request is
 * refused. Either basic credentials (users with a password and a role) or an `authorize`
 * callback that looks at the request (a session cookie, a header set by the proxy in front)
 * and returns the user, or `null` to refuse.
 *
 * @module
 */
import { timingSafeEqualText } from "./secret.js";

/** What a user may do: `"admin"` reads and acts; `"read"` only reads. */
export type DashboardRole = "admin" | "read";

/** The user a request was authorized as. */
export interface DashboardUser {
  /** A name for people (shown in the page's header). */
  readonly name: string;
  /** What the user may do. */
  readonly role: DashboardRole;
  /**
   * What the CSRF token is bound to, beside the name: a session id for an `authorize` callback
   * that has sessions (a token then dies with its session). Basic credentials use the password's
   * digest, so a token stops working when the password changes.
   */
  readonly session?: string;
}

/** One user of basic authentication. */
export interface BasicUser {
  readonly username: string;
  readonly password: string;
  /** Default `"read"`: acting is granted, never assumed. */
  readonly role?: DashboardRole;
}

/** How requests are authorized: basic credentials, or a callback. */
export type DashboardAuth =
  | {
      /** HTTP basic authentication against these users. */
      readonly basic: readonly BasicUser[];
      /** The realm the browser shows. Default `"rowclaim dashboard"`. */
      readonly realm?: string;
    }
  | {
      /**
       * Returns the user a request belongs to, or `null` to refuse it (401). Called for every
       * request, static files included.
       */
      readonly authorize: (request: Request) => DashboardUser | null | Promise<DashboardUser | null>;
    };

/** The outcome of authorizing one request. */
export type AuthResult =
  | { readonly ok: true; readonly user: DashboardUser }
  | { readonly ok: false; readonly status: 401 | 403; readonly challenge?: string; readonly reason: string };

/** Authorizes `request` under `auth`; no auth at all refuses everything (403). */
export async function authorizeRequest(
  auth: DashboardAuth | undefined,
  request: Request,
): Promise<AuthResult> {
  if (auth === undefined)
    return {
      ok: false,
      status: 403,
      reason:
        "This dashboard has no authorization configured: pass auth: { basic: [...] } or auth: { authorize } to createDashboard.",
    };
  if ("authorize" in auth) {
    const user = await auth.authorize(request);
    if (user === null) return { ok: false, status: 401, reason: "Not signed in." };
    return { ok: true, user: { ...user, role: user.role === "admin" ? "admin" : "read" } };
  }
  const challenge = `Basic realm="${(auth.realm ?? "rowclaim dashboard").replace(/["\\]/g, "")}", charset="UTF-8"`;
  const given = parseBasic(request.headers.get("authorization"));
  if (given === undefined) return { ok: false, status: 401, challenge, reason: "Credentials required." };
  let found: BasicUser | undefined;
  // Compare against every user (no early exit), so timing says nothing about which names exist.
  for (const candidate of auth.basic) {
    const nameMatches = await timingSafeEqualText(candidate.username, given.username);
    const passwordMatches = await timingSafeEqualText(candidate.password, given.password);
    if (nameMatches && passwordMatches && found === undefined) found = candidate;
  }
  if (found === undefined)
    return { ok: false, status: 401, challenge, reason: "Wrong user name or password." };
  return {
    ok: true,
    user: { name: found.username, role: found.role ?? "read", session: `basic:${found.password}` },
  };
}

function parseBasic(header: string | null): { username: string; password: string } | undefined {
  if (header === null) return undefined;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (match?.[1] === undefined) return undefined;
  let decoded: string;
  try {
    const binary = atob(match[1]);
    decoded = new TextDecoder().decode(Uint8Array.from(binary, (character) => character.charCodeAt(0)));
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
