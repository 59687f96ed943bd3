import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";

/** A request the hostile provider received. */
export interface HostileRequest {
  method: string;
  path: string;
  body: string;
}

/** What the hostile provider knows of an authorization request it answered with a code. */
export interface HostileLogin {
  query: URLSearchParams;
  /** The ID token's claims, before iss/aud/nonce/iat/exp defaults. */
  claims: JWTPayload;
}

/** Options of startHostileIdp; every hook has a default an honest provider would have. */
export interface HostileIdpOptions {
  /** Where the discovery document is served; default /.well-known/openid-configuration. */
  discoveryPath?: string;
  /** Fields that replace the discovery document's (issuer, endpoints...). */
  discovery?: (url: string) => Record<string, unknown>;
  /** Bytes of padding in a field of the discovery document, JWKS or token answer. */
  pad?: { discovery?: number; jwks?: number; token?: number };
  /** Where /auth sends the browser; default back to redirect_uri with a code and state. */
  authorize?: (query: URLSearchParams, url: string) => string;
  /** The ID token's claims for a code; default sub "someone". */
  claims?: (query: URLSearchParams) => JWTPayload;
}

/** A hostile OpenID Provider of the test's own, on 127.0.0.1: a small HTTP server. */
export interface HostileIdp {
  url: string;
  requests: HostileRequest[];
  /** Requests to its token endpoint. */
  tokenRequests(): HostileRequest[];
  close(): Promise<void>;
}

/**
 * Start a provider that does what a hostile one may: serve a discovery document naming any
 * issuer, send the browser anywhere, answer codes with ID tokens of its own key naming anyone,
 * pad any answer. It records every request it receives.
 */
export async function startHostileIdp(opts: HostileIdpOptions = {}): Promise<HostileIdp> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "hostile-1", alg: "ES256", use: "sig" };
  const requests: HostileRequest[] = [];
  const logins = new Map<string, HostileLogin>();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pad = (n = 0) => (n > 0 ? { padding: "x".repeat(n) } : {});
  const discovery = () => ({
    issuer: url,
    authorization_endpoint: `${url}/auth`,
    token_endpoint: `${url}/token`,
    jwks_uri: `${url}/jwks`,
    response_types_supported: ["code"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: ["ES256"],
    code_challenge_methods_supported: ["S256"],
    ...opts.discovery?.(url),
    ...pad(opts.pad?.discovery),
  });
  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json" }).end(text);
  };
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const u = new URL(req.url ?? "/", url);
        const body = Buffer.concat(chunks).toString("utf8");
        requests.push({ method: req.method ?? "GET", path: u.pathname, body });
        if (u.pathname === (opts.discoveryPath ?? "/.well-known/openid-configuration")) {
          return json(res, 200, discovery());
        }
        if (u.pathname === "/jwks") return json(res, 200, { keys: [jwk], ...pad(opts.pad?.jwks) });
        if (u.pathname === "/auth") {
          let location: string;
          if (opts.authorize) {
            location = opts.authorize(u.searchParams, url);
          } else {
            const code = randomBytes(16).toString("hex");
            logins.set(code, {
              query: u.searchParams,
              claims: opts.claims?.(u.searchParams) ?? { sub: "someone" },
            });
            const back = new URL(u.searchParams.get("redirect_uri") ?? url);
            back.searchParams.set("code", code);
            back.searchParams.set("state", u.searchParams.get("state") ?? "");
            location = back.href;
          }
          res.writeHead(302, { location }).end();
          return;
        }
        if (u.pathname === "/token") {
          const form = new URLSearchParams(body);
          const login = logins.get(form.get("code") ?? "");
          if (!login) return json(res, 400, { error: "invalid_grant" });
          const doc = discovery() as { issuer: string };
          const idToken = await new SignJWT({
            iss: doc.issuer,
            aud: login.query.get("client_id") ?? "",
            nonce: login.query.get("nonce") ?? "",
            ...login.claims,
          })
            .setProtectedHeader({ alg: "ES256", kid: jwk.kid, typ: "JWT" })
            .setIssuedAt()
            .setExpirationTime("5m")
            .sign(privateKey);
          return json(res, 200, {
            access_token: randomBytes(16).toString("hex"),
            token_type: "Bearer",
            expires_in: 300,
            id_token: idToken,
            ...pad(opts.pad?.token),
          });
        }
        json(res, 404, { error: "not_found" });
      })().catch(() => res.destroy());
    });
  });
  return {
    url,
    requests,
    tokenRequests: () => requests.filter((r) => r.path === "/token"),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
