import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type CryptoKey,
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  SignJWT,
} from "jose";

type Alg = "RS256" | "ES256";

interface IssuerKey {
  kid: string;
  alg: Alg;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

/** Options of one token issued by the test issuer. */
export interface IssueOptions {
  /** Header kid; default: the current key's. */
  kid?: string;
  /** Leave the kid out of the header. */
  omitKid?: boolean;
  /** Sign with the current key of this algorithm (created and published on first use). */
  alg?: Alg;
  /** Seconds until exp; default 600. Negative for an expired token. */
  expiresIn?: number;
  /** nbf, seconds since the epoch. */
  notBefore?: number;
  /** Claims to leave out, defaults included (e.g. "sub"). */
  omit?: string[];
}

/** A real OIDC issuer on 127.0.0.1 for tests. */
export interface OidcIssuer {
  /** The issuer URL (`iss`), http://127.0.0.1:<port>. */
  url: string;
  /** Sign a token; claims default to iss = url, sub "workload", aud "gatehouse", iat now. */
  issue(claims?: JWTPayload, opts?: IssueOptions): Promise<string>;
  /** Add a new key of the default algorithm; it signs from now on. Returns its kid. */
  rotateKeys(opts?: { keepPrevious?: boolean }): Promise<string>;
  /** The published JWKS (public keys only). */
  jwks(): { keys: JWK[] };
  /** Answer 503 to everything until up(). */
  down(): void;
  up(): void;
  /** Requests received, by document (counted while down too). */
  requests: { discovery: number; jwks: number };
  stop(): Promise<void>;
}

/** Options of startOidcIssuer. */
export interface OidcIssuerOptions {
  /** Default signing algorithm: RS256. */
  alg?: Alg;
  /** Fields that replace the discovery document's (e.g. another issuer, an http jwks_uri). */
  discovery?: Record<string, unknown>;
  /** The issuer's clock, milliseconds; default Date.now. */
  now?: () => number;
}

/** Start an OIDC issuer publishing discovery and JWKS on a loopback port. */
export async function startOidcIssuer(opts: OidcIssuerOptions = {}): Promise<OidcIssuer> {
  const defaultAlg = opts.alg ?? "RS256";
  const now = opts.now ?? Date.now;
  let keys: IssuerKey[] = [await newKey(defaultAlg)];
  let isDown = false;
  const requests = { discovery: 0, jwks: 0 };

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    let doc: unknown;
    if (path === "/.well-known/openid-configuration") {
      requests.discovery++;
      doc = { issuer: url, jwks_uri: `${url}/jwks.json`, ...opts.discovery };
    } else if (path === "/jwks.json") {
      requests.jwks++;
      doc = jwks();
    }
    if (isDown) return void res.writeHead(503).end();
    if (!doc) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(doc));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  function jwks() {
    return { keys: keys.map((k) => k.publicJwk) };
  }

  async function current(alg: Alg): Promise<IssuerKey> {
    const found = keys.findLast((k) => k.alg === alg);
    if (found) return found;
    const key = await newKey(alg);
    keys.push(key);
    return key;
  }

  return {
    url,
    requests,
    jwks,
    async issue(claims = {}, io = {}) {
      const key = await current(io.alg ?? defaultAlg);
      const iat = Math.floor(now() / 1000);
      const header = io.omitKid
        ? { alg: key.alg, typ: "JWT" }
        : { alg: key.alg, typ: "JWT", kid: io.kid ?? key.kid };
      const body: JWTPayload = {
        iss: url,
        sub: "workload",
        aud: "gatehouse",
        iat,
        exp: iat + (io.expiresIn ?? 600),
        ...(io.notBefore === undefined ? {} : { nbf: io.notBefore }),
        ...claims,
      };
      for (const name of io.omit ?? []) delete body[name];
      return new SignJWT(body).setProtectedHeader(header).sign(key.privateKey);
    },
    async rotateKeys(ro = {}) {
      const key = await newKey(defaultAlg);
      keys = ro.keepPrevious === false ? [key] : [...keys, key];
      return key.kid;
    },
    down() {
      isDown = true;
    },
    up() {
      isDown = false;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function newKey(alg: Alg): Promise<IssuerKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = randomBytes(8).toString("hex");
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { kid, alg, privateKey, publicJwk };
}
