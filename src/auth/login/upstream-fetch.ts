import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isPrivateAddress, PrivateAddressError, publicOnlyLookup } from "./private-address.js";

/**
 * The largest body Gatehouse reads from an identity provider (discovery, JWKS, token answer,
 * userinfo). Real ones are a few kilobytes; the cap keeps a hostile provider from making the
 * server hold megabytes per sign-in, and the cached configurations small.
 */
export const maxUpstreamBodyBytes = 128 * 1024;

/** Options of createUpstreamFetch. */
export interface UpstreamFetchOptions {
  /** The largest body read; default maxUpstreamBodyBytes. */
  maxBytes?: number;
  /** Refuse hosts that are, or resolve to, private or loopback addresses. */
  publicOnly: boolean;
}

/** An answer larger than the cap. */
export class BodyTooLargeError extends Error {
  override name = "BodyTooLargeError";
  constructor(host: string, maxBytes: number) {
    super(`the answer of ${host} is larger than ${maxBytes} bytes`);
  }
}

type FetchInit = {
  body?: unknown;
  headers?: Record<string, string>;
  method?: string;
  signal?: AbortSignal | null;
};

/**
 * Create the fetch Gatehouse's OpenID Connect client (openid-client's customFetch) uses: one
 * request, no redirects followed, the body read up to a cap (Content-Length or not) and then
 * handed over whole; with `publicOnly`, no connection to a private or loopback address, checked
 * on the addresses actually connected to.
 */
export function createUpstreamFetch(opts: UpstreamFetchOptions) {
  const maxBytes = opts.maxBytes ?? maxUpstreamBodyBytes;
  return (url: string, init: FetchInit = {}): Promise<Response> => {
    const target = new URL(url);
    if (opts.publicOnly && (target.hostname === "localhost" || isPrivateAddress(target.hostname))) {
      return Promise.reject(new PrivateAddressError(target.hostname));
    }
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    return new Promise<Response>((resolve, reject) => {
      const req = send(
        target,
        {
          method: init.method ?? "GET",
          headers: {
            ...init.headers,
            ...(body === undefined ? {} : { "content-length": Buffer.byteLength(body) }),
          },
          ...(init.signal ? { signal: init.signal } : {}),
          ...(opts.publicOnly ? { lookup: publicOnlyLookup } : {}),
        },
        (res) => {
          readCapped(res, maxBytes, target.host)
            // A header the Fetch API refuses makes toResponse throw: a refused answer too.
            .then((buf) => resolve(toResponse(res, buf)))
            .catch((err: unknown) => {
              req.destroy();
              reject(err);
            });
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  };
}

function readCapped(res: IncomingMessage, maxBytes: number, host: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // The first outcome counts: destroying the response emits events of its own.
    const tooLarge = () => {
      reject(new BodyTooLargeError(host, maxBytes));
      res.destroy();
    };
    if (Number(res.headers["content-length"] ?? "0") > maxBytes) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    res.on("data", (chunk: Buffer) => {
      // Content-Length may be absent or wrong: what arrives counts.
      size += chunk.length;
      if (size > maxBytes) return tooLarge();
      chunks.push(chunk);
    });
    res.on("end", () => resolve(Buffer.concat(chunks)));
    res.on("error", reject);
    res.on("aborted", () => reject(new Error(`the answer of ${host} was cut short`)));
  });
}

function toResponse(res: IncomingMessage, body: Buffer): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const status = res.statusCode ?? 502;
  // The Fetch API allows no body with these statuses, nor any status outside 200-599.
  const bodyless = status === 204 || status === 205 || status === 304;
  return new Response(bodyless ? null : new Uint8Array(body), {
    status: status < 200 || status > 599 ? 502 : status,
    statusText: res.statusMessage ?? "",
    headers,
  });
}
