import { OidcError } from "./oidc-error.js";

const loopbackHosts = new Set(["127.0.0.1", "[::1]", "localhost"]);

/**
 * Report whether `url` may be fetched for OIDC discovery: https, or plain http on a loopback
 * host when `allowInsecureLoopback` (tests, local development). No credentials, query or
 * fragment, as OpenID Connect Discovery requires of an issuer.
 */
export function isAllowedIssuerUrl(url: string, allowInsecureLoopback: boolean): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.username || u.password || u.search || u.hash) return false;
  if (u.protocol === "https:") return true;
  return u.protocol === "http:" && allowInsecureLoopback && loopbackHosts.has(u.hostname);
}

/** Limits of one fetch of a discovery or JWKS document. */
export interface FetchLimits {
  fetch: typeof fetch;
  timeoutMs: number;
  maxBytes: number;
}

/**
 * Fetch a JSON object, failing with OidcError `issuer_unavailable` on a network error,
 * timeout or non-200 answer, and `bad_discovery` on a body that is too large or not a JSON
 * object. Redirects are refused: they could lead off https or to an internal address.
 */
export async function fetchJson(
  url: string,
  limits: FetchLimits,
): Promise<Record<string, unknown>> {
  const signal = AbortSignal.timeout(limits.timeoutMs);
  let res: Response;
  try {
    res = await limits.fetch(url, {
      signal,
      redirect: "error",
      headers: { accept: "application/json" },
    });
  } catch {
    throw new OidcError("issuer_unavailable", `cannot fetch ${url}`);
  }
  if (res.status !== 200) {
    await res.body?.cancel().catch(() => {});
    throw new OidcError("issuer_unavailable", `${url} answered ${res.status}`);
  }
  const text = await readCapped(res, limits.maxBytes, url);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new OidcError("bad_discovery", `${url} is not JSON`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw new OidcError("bad_discovery", `${url} is not a JSON object`);
  }
  return doc as Record<string, unknown>;
}

async function readCapped(res: Response, maxBytes: number, url: string): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw new OidcError("bad_discovery", `${url} is larger than ${maxBytes} bytes`);
  }
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      // Content-Length may be absent or wrong; count what actually arrives.
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new OidcError("bad_discovery", `${url} is larger than ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof OidcError) throw err;
    throw new OidcError("issuer_unavailable", `reading ${url} failed`);
  }
  return Buffer.concat(chunks).toString("utf8");
}
