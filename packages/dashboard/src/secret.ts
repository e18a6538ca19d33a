/**
 * HMAC with Web Crypto (Node 20+, Bun, Deno, workers alike): CSRF tokens and constant-time
 * comparison of secrets.
 *
 * @module
 */

const encoder = new TextEncoder();

/** A random secret, base64url, for a dashboard created without one (tokens then last as long as the process). */
export function randomSecret(): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return base64url(bytes);
}

/** HMAC-SHA-256 of `message` under `secret`, base64url. */
export async function hmac(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signature = await crypto.subtle.sign("HMAC", key, encoder.encode(message));
  return base64url(new Uint8Array(signature));
}

let comparisonKey: ReturnType<typeof crypto.subtle.importKey> | undefined;

/**
 * Whether `a` and `b` are equal, in time that depends on neither: both are HMACed under a key
 * of this process and the digests compared byte by byte without an early exit.
 */
export async function timingSafeEqualText(a: string, b: string): Promise<boolean> {
  comparisonKey ??= crypto.subtle.importKey(
    "raw",
    crypto.getRandomValues(new Uint8Array(32)),
    {
      name: "HMAC",
      hash: "SHA-256",
    },
    false,
    ["sign"],
  );
  const key = await comparisonKey;
  const [left, right] = await Promise.all([
    crypto.subtle.sign("HMAC", key, encoder.encode(a)),
    crypto.subtle.sign("HMAC", key, encoder.encode(b)),
  ]);
  const x = new Uint8Array(left);
  const y = new Uint8Array(right);
  let difference = x.length ^ y.length;
  for (let index = 0; index < x.length; index += 1) difference |= (x[index] ?? 0) ^ (y[index] ?? 0);
  return difference === 0;
}

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
