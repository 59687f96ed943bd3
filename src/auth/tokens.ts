import { hash, randomBytes } from "node:crypto";
import { errors, type JWTHeaderParameters, jwtVerify, SignJWT } from "jose";
import type { KeyRing } from "./keyring.js";

/** Why a token was refused. Safe to log; never contains the token. */
export type TokenFailure =
  | "malformed"
  | "bad_algorithm"
  | "missing_kid"
  | "unknown_kid"
  | "bad_signature"
  | "expired"
  | "not_yet_valid"
  | "bad_issuer"
  | "bad_audience"
  | "bad_claims";

/** TokenError is any refusal of a Gatehouse token; the caller answers UNAUTHENTICATED. */
export class TokenError extends Error {
  override name = "TokenError";
  constructor(readonly reason: TokenFailure) {
    super(`token rejected: ${reason}`);
  }
}

/** A token and the moment it stops being valid. */
export interface IssuedToken {
  token: string;
  expiry: Date;
}

/** What a verified Gatehouse token says about its bearer. */
export interface VerifiedToken {
  /** The identity uid. */
  sub: string;
  email?: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
  /** Issue time, seconds since the epoch: a token cutoff (ScimStore.tokenCutoff) ends it. */
  iat: number;
  /** The sign-in session the token was issued in (people's sign-in), if any. */
  sid?: string;
  /** A narrowed token's capabilities (`cap`): it may do nothing else. */
  cap?: readonly string[];
  /** A narrowed token's group (`grp`): it may do nothing outside that group's subtree. */
  grp?: string;
}

/** How a token is narrowed below its identity (STS `cap` and `group`): its claims. */
export interface TokenNarrowing {
  cap?: readonly string[];
  grp?: string;
}

/** Create the issuer of Gatehouse tokens: ES256, signed by the newest key of the ring. */
export function createTokenIssuer(opts: {
  keyRing: KeyRing;
  /** `iss`: the auth URL. */
  issuer: string;
  lifetimeSeconds?: number;
  now?: () => number;
}) {
  const lifetime = opts.lifetimeSeconds ?? 3600;
  const now = opts.now ?? Date.now;
  return {
    /**
     * Sign a token for identity `sub` and audience `aud`; `lifetimeSeconds` and `notAfter`
     * (seconds since the epoch) shorten its life below the issuer's, never lengthen it.
     */
    async issue(
      sub: string,
      aud: string,
      extra: {
        email?: string;
        sid?: string;
        lifetimeSeconds?: number;
        notAfter?: number;
        narrowing?: TokenNarrowing;
      } = {},
    ): Promise<IssuedToken> {
      const { kid, key } = await opts.keyRing.signingKey();
      const iat = Math.floor(now() / 1000);
      const exp = Math.min(
        iat + Math.min(lifetime, extra.lifetimeSeconds ?? lifetime),
        extra.notAfter ?? Number.POSITIVE_INFINITY,
      );
      const claims = {
        ...(extra.email === undefined ? {} : { email: extra.email }),
        ...(extra.sid === undefined ? {} : { sid: extra.sid }),
        ...(extra.narrowing?.cap === undefined ? {} : { cap: [...extra.narrowing.cap] }),
        ...(extra.narrowing?.grp === undefined ? {} : { grp: extra.narrowing.grp }),
      };
      const token = await new SignJWT(claims)
        .setProtectedHeader({ alg: "ES256", kid, typ: "JWT" })
        .setIssuer(opts.issuer)
        .setSubject(sub)
        .setAudience(aud)
        .setIssuedAt(iat)
        .setExpirationTime(exp)
        .setJti(randomBytes(16).toString("base64url"))
        .sign(key);
      return { token, expiry: new Date(exp * 1000) };
    },
  };
}

/** TokenIssuer signs Gatehouse tokens. */
export type TokenIssuer = ReturnType<typeof createTokenIssuer>;

// Our tokens are a few hundred bytes; anything far larger is not one of ours.
const maxTokenLength = 8192;

/**
 * Create the verifier of Gatehouse tokens. It accepts ES256 only, requires a known `kid`,
 * checks `iss`, `aud`, `exp` and `nbf` (with clock tolerance), and caches verified tokens
 * (keyed by a hash, never the token) until they expire. Whether the identity still exists is
 * the caller's question.
 */
export function createTokenVerifier(opts: {
  keyRing: KeyRing;
  issuer: string;
  /** Accepted `aud`: the base URL. */
  audience: string | string[];
  clockToleranceSeconds?: number;
  cacheSize?: number;
  now?: () => number;
}) {
  const tolerance = opts.clockToleranceSeconds ?? 30;
  const cacheSize = opts.cacheSize ?? 10_000;
  const now = opts.now ?? Date.now;
  // Least recently used first, roughly (CLOCK): a hit only marks its entry, and eviction gives
  // a marked entry a second round instead of dropping it. Moving every hit to the end of the
  // map instead inserted a new key string into a long-lived table per request, which a
  // scavenge then had to keep and promote: ~70 bytes of old-generation garbage per call.
  const cache = new Map<string, { token: VerifiedToken; used: boolean }>();
  const evictOne = () => {
    for (const [key, entry] of cache) {
      cache.delete(key);
      if (!entry.used) return;
      entry.used = false;
      cache.set(key, entry);
    }
  };

  async function getKey(header: JWTHeaderParameters) {
    if (typeof header.kid !== "string" || header.kid === "") throw new TokenError("missing_kid");
    const key = await opts.keyRing.verificationKey(header.kid);
    if (!key) throw new TokenError("unknown_kid");
    return key;
  }

  return {
    /** Verify a bearer token. Throws TokenError on any failure. */
    async verify(token: string): Promise<VerifiedToken> {
      if (token.length > maxTokenLength) throw new TokenError("malformed");
      const nowSec = Math.floor(now() / 1000);
      const id = hash("sha256", token, "base64url");
      const hit = cache.get(id);
      if (hit) {
        // Same rule as jose's: expired once exp <= now - tolerance.
        if (hit.token.exp <= nowSec - tolerance) {
          cache.delete(id);
          throw new TokenError("expired");
        }
        hit.used = true;
        return hit.token;
      }
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jwtVerify(token, getKey, {
          algorithms: ["ES256"],
          issuer: opts.issuer,
          audience: opts.audience,
          typ: "JWT",
          requiredClaims: ["sub", "exp", "iat"],
          clockTolerance: tolerance,
          currentDate: new Date(nowSec * 1000),
        }));
      } catch (err) {
        throw toTokenError(err);
      }
      const { sub, exp, iat, email, sid, cap, grp } = payload;
      if (
        typeof sub !== "string" ||
        sub === "" ||
        typeof exp !== "number" ||
        typeof iat !== "number"
      ) {
        throw new TokenError("bad_claims");
      }
      // A narrowing the verifier could not read would be dropped, widening the token: refused.
      if (
        (cap !== undefined &&
          !(Array.isArray(cap) && cap.every((c): c is string => typeof c === "string"))) ||
        (grp !== undefined && (typeof grp !== "string" || grp === ""))
      ) {
        throw new TokenError("bad_claims");
      }
      // Frozen: callers share the cached object.
      const verified: VerifiedToken = Object.freeze({
        sub,
        exp,
        iat,
        ...(typeof email === "string" ? { email } : {}),
        ...(typeof sid === "string" ? { sid } : {}),
        ...(Array.isArray(cap) ? { cap: Object.freeze([...(cap as string[])]) } : {}),
        ...(typeof grp === "string" ? { grp } : {}),
      });
      if (cacheSize > 0) {
        if (cache.size >= cacheSize) evictOne();
        cache.set(id, { token: verified, used: false });
      }
      return verified;
    },
  };
}

/** TokenVerifier checks Gatehouse tokens. */
export type TokenVerifier = ReturnType<typeof createTokenVerifier>;

// A refusal of the token becomes TokenError; anything else (the store is down) stays what it
// is, so the caller answers UNAVAILABLE or INTERNAL rather than blaming the token.
function toTokenError(err: unknown): unknown {
  if (err instanceof TokenError) return err;
  if (err instanceof errors.JOSEError || err instanceof TypeError) {
    return new TokenError(joseFailure(err));
  }
  return err;
}

/** Classify a jose verification error; shared with the OIDC verifier. */
export function joseFailure(err: unknown): TokenFailure {
  if (err instanceof errors.JWTExpired) return "expired";
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === "nbf" || err.claim === "iat") return "not_yet_valid";
    if (err.claim === "iss") return "bad_issuer";
    if (err.claim === "aud") return "bad_audience";
    return "bad_claims";
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return "bad_algorithm";
  if (err instanceof errors.JOSENotSupported) return "bad_algorithm";
  if (err instanceof errors.JWKSNoMatchingKey) return "unknown_kid";
  if (err instanceof errors.JWSSignatureVerificationFailed) return "bad_signature";
  return "malformed";
}
