import { hash } from "node:crypto";
import {
  type CryptoKey,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  generateKeyPair,
  type JWTPayload,
  jwtVerify,
} from "jose";
import { joseFailure } from "../tokens.js";
import { fetchJson, isAllowedIssuerUrl } from "./fetch-json.js";
import { OidcError } from "./oidc-error.js";
import { oidcAlgorithms, parsePublicJwks, publicSigningKeys } from "./public-jwks.js";

type KeySet = ReturnType<typeof createLocalJWKSet>;

interface IssuerEntry {
  keys?: KeySet;
  fetchedAt: number;
  /** Last fetch attempt, successful or not: the cool-down counts from here. */
  attemptAt: number;
  inflight?: Promise<void> | undefined;
}

/** Options of createOidcVerifier; times in milliseconds. */
export interface OidcVerifierOptions {
  /** Accept http:// issuers on 127.0.0.1, [::1] and localhost (tests, local development). */
  allowInsecureLoopback: boolean;
  /** At most one fetch per issuer in this period (unknown kid, expired cache, failures). */
  cooldownMs?: number;
  /** How long fetched keys are used before they are refreshed. */
  cacheTtlMs?: number;
  timeoutMs?: number;
  maxResponseBytes?: number;
  clockToleranceSeconds?: number;
  /** Issuers cached at once; the oldest is forgotten first. */
  maxIssuers?: number;
  /** Discovery fetches to one origin (all its issuers) per cool-down period; default 10. */
  maxFetchesPerOrigin?: number;
  /** Verified tokens remembered at once (by hash); the oldest is forgotten first. */
  maxVerifiedTokens?: number;
  /** The most bytes the verified tokens' claims may be counted as together; default 8 MB. */
  maxVerifiedBytes?: number;
  fetch?: typeof fetch;
  now?: () => number;
  /** Told when a refresh fails while cached keys stay in use (worth a warning in the log). */
  onStaleKeys?: (issuer: string, err: OidcError) => void;
}

/** Per-call rules of OidcVerifier.verify. */
export interface OidcVerifyOptions {
  /** The issuer the token must come from. */
  expectedIssuer?: string;
  /**
   * Decide, before any network request, whether the token's (unverified) issuer may be
   * contacted at all: e.g. the identity's issuer or issuerPattern, or the trusted user issuers.
   * Without it an unauthenticated caller could make the server fetch from any https host.
   */
  acceptIssuer?: (iss: string) => boolean;
}

/** The rules of a staticKeys identity. */
export interface StaticKeysOptions {
  issuer: string;
  /** The identity's staticKeys.issuerKeys: a JWKS document. */
  issuerKeysJson: string;
  /** After this moment the keys are refused. */
  expirationTime: Date;
}

// Workload tokens are small; a cap keeps a hostile one from costing a parse of megabytes.
const maxTokenLength = 16_384;

/**
 * Create the verifier of workload OIDC tokens from external issuers: discovery and JWKS are
 * fetched from the token's issuer and cached; signatures, `iss`, `exp` and `nbf` are checked.
 * Audience, subject and other claims are the claim match's job.
 */
export function createOidcVerifier(opts: OidcVerifierOptions) {
  const cooldownMs = opts.cooldownMs ?? 30_000;
  const ttlMs = opts.cacheTtlMs ?? 10 * 60_000;
  const maxIssuers = opts.maxIssuers ?? 1000;
  const tolerance = opts.clockToleranceSeconds ?? 30;
  const now = opts.now ?? Date.now;
  const limits = {
    fetch: opts.fetch ?? globalThis.fetch,
    timeoutMs: opts.timeoutMs ?? 5000,
    maxBytes: opts.maxResponseBytes ?? 512 * 1024,
  };
  const issuers = new Map<string, IssuerEntry>();
  const staticKeySets = new Map<string, KeySet>();
  // Tokens whose signature a key set has verified, by a hash of the token (never the token):
  // a workload's token is typically exchanged again and again until it nears expiry. A hit
  // counts only while that same key set is in use for the same issuer (a refresh that
  // fetches new keys starts over), and exp is checked again on every use. The signature
  // check costs more than the rest of an exchange together.
  const verified = new Map<
    string,
    { keys: KeySet; payload: Readonly<JWTPayload>; bytes: number }
  >();
  const maxVerified = opts.maxVerifiedTokens ?? 10_000;
  // And by bytes: a token may be 16 kB, so 10,000 of them could hold 160 MB of claims. A
  // payload is counted as its token's length (its decoded claims are shorter) and a little.
  const maxVerifiedBytes = opts.maxVerifiedBytes ?? 8 * 1024 * 1024;
  let verifiedBytes = 0;
  const forget = (id: string) => {
    const e = verified.get(id);
    if (!e) return;
    verifiedBytes -= e.bytes;
    verified.delete(id);
  };

  async function load(iss: string): Promise<KeySet> {
    const base = iss.endsWith("/") ? iss.slice(0, -1) : iss;
    const discovery = await fetchJson(`${base}/.well-known/openid-configuration`, limits);
    // The document must speak for the very issuer it was fetched for (OIDC Discovery §4.3).
    if (discovery.issuer !== iss) throw new OidcError("bad_discovery", "issuer mismatch");
    const jwksUri = discovery.jwks_uri;
    if (typeof jwksUri !== "string" || !isAllowedIssuerUrl(jwksUri, opts.allowInsecureLoopback)) {
      throw new OidcError("insecure_issuer", "jwks_uri is missing or not https");
    }
    const jwks = publicSigningKeys(await fetchJson(jwksUri, limits));
    try {
      return createLocalJWKSet(jwks);
    } catch {
      throw new OidcError("bad_discovery", "the JWKS is malformed");
    }
  }

  // Fetches per origin (scheme, host, port) in the current cool-down window: many issuers
  // may share a host (one per tenant), and a caller may name new ones at will; the host is
  // contacted at most this often whatever the issuer paths.
  const originFetches = new Map<string, { since: number; count: number }>();
  const maxFetchesPerOrigin = opts.maxFetchesPerOrigin ?? 10;
  const originAllows = (iss: string): boolean => {
    const origin = new URL(iss).origin;
    let f = originFetches.get(origin);
    if (!f || now() - f.since >= cooldownMs) {
      if (originFetches.size >= maxIssuers) originFetches.clear();
      f = { since: now(), count: 0 };
      originFetches.set(origin, f);
    }
    return ++f.count <= maxFetchesPerOrigin;
  };

  /** Fetch the issuer's keys unless a fetch happened within the cool-down. */
  function refresh(iss: string, entry: IssuerEntry): Promise<void> {
    if (entry.inflight) return entry.inflight;
    if (now() - entry.attemptAt < cooldownMs) return Promise.resolve();
    if (!originAllows(iss)) return Promise.resolve();
    entry.attemptAt = now();
    entry.inflight = load(iss)
      .then(
        (keys) => {
          entry.keys = keys;
          entry.fetchedAt = now();
        },
        (err: unknown) => {
          // Stale keys beat no keys: an issuer outage must not lock its workloads out.
          if (!entry.keys) throw err;
          if (err instanceof OidcError) opts.onStaleKeys?.(iss, err);
        },
      )
      .finally(() => {
        entry.inflight = undefined;
      });
    return entry.inflight;
  }

  function entryOf(iss: string): IssuerEntry {
    let entry = issuers.get(iss);
    if (!entry) {
      if (issuers.size >= maxIssuers) {
        const oldest = issuers.keys().next();
        if (!oldest.done) issuers.delete(oldest.value);
      }
      entry = { fetchedAt: 0, attemptAt: Number.NEGATIVE_INFINITY };
      issuers.set(iss, entry);
    }
    return entry;
  }

  async function check(token: string, keys: KeySet, issuer: string): Promise<JWTPayload> {
    const id = hash("sha256", token, "base64url");
    const hit = verified.get(id);
    if (hit && hit.keys === keys && hit.payload.iss === issuer) {
      // jose's rule: expired once exp <= now - tolerance.
      if ((hit.payload.exp as number) <= Math.floor(now() / 1000) - tolerance) {
        forget(id);
        throw new OidcError("expired");
      }
      return hit.payload;
    }
    const payload = Object.freeze(checkClaimTypes(await verifySignature(token, keys, issuer)));
    const bytes = 256 + token.length;
    forget(id);
    while (
      verified.size > 0 &&
      (verified.size >= maxVerified || verifiedBytes + bytes > maxVerifiedBytes)
    ) {
      forget(verified.keys().next().value!);
    }
    verified.set(id, { keys, payload, bytes });
    verifiedBytes += bytes;
    return payload;
  }

  async function verifySignature(token: string, keys: KeySet, issuer: string) {
    const options = {
      algorithms: oidcAlgorithms,
      issuer,
      requiredClaims: ["sub", "exp"],
      clockTolerance: tolerance,
      currentDate: new Date(now()),
    };
    try {
      return (await jwtVerify(token, keys, options)).payload;
    } catch (err) {
      if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err;
      // No kid and several candidate keys: try each, as jose leaves to its caller.
      for await (const key of err as unknown as AsyncIterable<CryptoKey>) {
        try {
          return (await jwtVerify(token, key, options)).payload;
        } catch (e) {
          if (!(e instanceof errors.JWSSignatureVerificationFailed)) throw e;
        }
      }
      throw new errors.JWSSignatureVerificationFailed();
    }
  }

  // Decoy keys, one per algorithm, made on first use: nothing they verify is ever accepted.
  const decoyKeys = new Map<string, Promise<CryptoKey>>();
  const decoyed = new Set<string>();

  return {
    /**
     * Do the work a verification of `token` would do, for a refusal that must not be told
     * apart from a verification by its timing (an STS exchange naming an identity that does
     * not exist): the token's signature is checked once against a decoy key of its algorithm,
     * and a token seen before costs a cache lookup, as a verified one does. Never throws.
     */
    async decoy(token: string): Promise<void> {
      if (token.length > maxTokenLength) return;
      const id = hash("sha256", token, "base64url");
      if (verified.has(id) || decoyed.has(id)) return;
      try {
        const alg = decodeProtectedHeader(token).alg;
        if (alg === undefined || !(oidcAlgorithms as readonly string[]).includes(alg)) return;
        let key = decoyKeys.get(alg);
        if (!key) {
          key = generateKeyPair(alg).then((pair) => pair.publicKey);
          decoyKeys.set(alg, key);
        }
        await jwtVerify(token, await key, { algorithms: [alg] });
      } catch {
        // Refused, as every decoy is.
      }
      if (decoyed.size >= maxVerified) decoyed.delete(decoyed.values().next().value!);
      decoyed.add(id);
    },

    /** Verify a token against its issuer's published keys. Throws OidcError. */
    async verify(token: string, vo: OidcVerifyOptions = {}): Promise<JWTPayload> {
      const iss = unverifiedIssuer(token);
      if (vo.expectedIssuer !== undefined && iss !== vo.expectedIssuer) {
        throw new OidcError("bad_issuer");
      }
      if (vo.acceptIssuer && !vo.acceptIssuer(iss)) throw new OidcError("issuer_not_allowed");
      if (!isAllowedIssuerUrl(iss, opts.allowInsecureLoopback)) {
        throw new OidcError("insecure_issuer");
      }
      const entry = entryOf(iss);
      if (!entry.keys || now() - entry.fetchedAt >= ttlMs) await refresh(iss, entry);
      if (!entry.keys) throw new OidcError("issuer_unavailable", "no keys cached");
      try {
        return await check(token, entry.keys, iss);
      } catch (err) {
        if (!(err instanceof errors.JWKSNoMatchingKey)) throw toOidcError(err);
      }
      // An unknown kid may be a key the issuer has just rotated in.
      const before = entry.keys;
      await refresh(iss, entry);
      if (entry.keys === before) throw new OidcError("unknown_kid");
      return check(token, entry.keys, iss).catch((err) => {
        throw toOidcError(err);
      });
    },

    /** Verify a token against an identity's static keys. Throws OidcError. */
    async verifyWithStaticKeys(token: string, so: StaticKeysOptions): Promise<JWTPayload> {
      if (now() >= so.expirationTime.getTime()) throw new OidcError("keys_expired");
      if (token.length > maxTokenLength) throw new OidcError("malformed");
      let keys = staticKeySets.get(so.issuerKeysJson);
      if (!keys) {
        try {
          keys = createLocalJWKSet(parsePublicJwks(so.issuerKeysJson));
        } catch (err) {
          throw err instanceof OidcError ? err : new OidcError("bad_keys");
        }
        if (staticKeySets.size >= 1000) staticKeySets.clear();
        staticKeySets.set(so.issuerKeysJson, keys);
      }
      return check(token, keys, so.issuer).catch((err) => {
        throw toOidcError(err);
      });
    },
  };
}

/** OidcVerifier checks workload tokens from external issuers. */
export type OidcVerifier = ReturnType<typeof createOidcVerifier>;

/**
 * Refuse a payload whose registered claims have the wrong JSON type: `sub` a non-empty
 * string, `aud` a string or an array of strings, `email` a string where present. An array
 * `sub` would otherwise match an identity by any element. (An `email_verified` that is not
 * the boolean true just leaves the email unverified.)
 */
function checkClaimTypes(payload: JWTPayload): JWTPayload {
  const { sub, aud, email } = payload as Record<string, unknown>;
  const ok =
    typeof sub === "string" &&
    sub !== "" &&
    (aud === undefined ||
      typeof aud === "string" ||
      (Array.isArray(aud) && aud.every((a) => typeof a === "string"))) &&
    (email === undefined || typeof email === "string");
  if (!ok) throw new OidcError("bad_claims");
  return payload;
}

function unverifiedIssuer(token: string): string {
  if (token.length > maxTokenLength) throw new OidcError("malformed");
  let iss: unknown;
  try {
    iss = decodeJwt(token).iss;
  } catch {
    throw new OidcError("malformed");
  }
  if (typeof iss !== "string" || iss === "") throw new OidcError("malformed", "no iss");
  return iss;
}

function toOidcError(err: unknown): unknown {
  if (err instanceof OidcError) return err;
  if (err instanceof errors.JOSEError || err instanceof TypeError) {
    return new OidcError(joseFailure(err));
  }
  return err;
}
