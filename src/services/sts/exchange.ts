import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectError, ServiceImpl } from "@connectrpc/connect";
import type { JWTPayload } from "jose";
import {
  ExchangeResponseSchema,
  type SecurityTokenService,
} from "../../../gen/gatehouse/sts/v1/sts_pb.js";
import type { Authorizer } from "../../auth/authorizer.js";
import { personLogin, personUid, verifiedEmail } from "../../auth/login/person.js";
import { OidcError } from "../../auth/oidc/oidc-error.js";
import type { OidcVerifier } from "../../auth/oidc/oidc-verifier.js";
import { narrowingOf } from "../../auth/principal.js";
import { TokenError, type TokenIssuer, type TokenVerifier } from "../../auth/tokens.js";
import { storeOf } from "../../call-store.js";
import type { Config } from "../../config.js";
import { invalidField, unauthenticated } from "../../errors.js";
import type { IamStore, IdentityRecord } from "../../store/iam-store.js";
import { StoreError } from "../../store/store.js";
import { isUid } from "../../uid.js";
import { createIdentityMatcher, Refused } from "./identity-match.js";
import { asksNarrowing, narrowFor, parseNarrowing } from "./narrowing.js";

/** What the STS exchange needs. */
export interface ExchangeDeps {
  store: Pick<IamStore, "getIdentity" | "touchIdentity" | "upsertPerson">;
  tokens: Pick<TokenIssuer, "issue">;
  oidc: OidcVerifier;
  /** Where an identity holds a capability: what a narrowed token may be narrowed to. */
  authorizer: Pick<Authorizer, "listScope">;
  config: Pick<
    Config,
    | "baseUrl"
    | "registryAudience"
    | "registryService"
    | "trustedUserIssuers"
    | "loginRequireVerifiedEmail"
  >;
  now: () => number;
  /** Told why an exchange was refused: a reason and uids, never a token. */
  onRefused?: (fields: { reason: string; identity?: string; issuer?: string }) => void;
  /**
   * Gatehouse API tokens taken as the bearer for a registry-audience token (what
   * docker-credential-gatehouse hands a registry); without it, only OIDC tokens are exchanged.
   */
  apiTokens?: {
    /** Verify a token of the base URL's audience (throws TokenError otherwise). */
    verify: TokenVerifier["verify"];
    /** Whether its identity still exists and its sign-in session (if any) is active. */
    active(sub: string, sid: string | undefined, iat: number): Promise<boolean>;
  };
}

/**
 * How long a registry-audience token made from a Gatehouse API token lives: 15 minutes (and
 * never past the API token's own expiry). docker asks its credential helper again for each
 * command, so a short life costs nothing and limits what a registry that keeps it can do.
 */
export const registryCredentialSeconds = 900;

/**
 * The one answer to every refused exchange. Unknown identity, bad signature, unreachable
 * issuer and failed claim match all read the same, so a caller cannot probe which identities
 * exist or what they match.
 */
export function exchangeRefused(): ConnectError {
  return unauthenticated("the token cannot be exchanged for this identity");
}

/**
 * Create the SecurityTokenService: trade a workload's OIDC token (the bearer) for a Gatehouse
 * token of an identity whose claimMatch or staticKeys it satisfies, or, without an identity,
 * log a person in with a token from a trusted user issuer.
 */
export function createSecurityTokenService(
  deps: ExchangeDeps,
): ServiceImpl<typeof SecurityTokenService> {
  const { store, tokens, oidc, config, now } = deps;
  // The registry by its service name (a host) or as GATEHOUSE_REGISTRY_AUDIENCE spells it.
  const audiences = new Set(
    [config.baseUrl, config.registryAudience, config.registryService].filter((a) => a !== ""),
  );
  const trusted = new Set(config.trustedUserIssuers);
  const registryAudiences = new Set(
    [config.registryAudience, config.registryService].filter(
      (a) => a !== "" && a !== config.baseUrl,
    ),
  );

  /**
   * A registry-audience token for the bearer of a Gatehouse API token, or undefined if the
   * bearer is not one. The token the registry's token endpoint takes and every API call
   * refuses: what a person hands a registry (which passes it to the token realm it names,
   * perhaps its own) instead of their API token. Never the other way: a registry-audience
   * token is not an API token here, and no API token is made from one.
   */
  async function registryCredential(token: string, aud: string) {
    if (!deps.apiTokens || !registryAudiences.has(aud)) return undefined;
    let verified: Awaited<ReturnType<TokenVerifier["verify"]>>;
    try {
      verified = await deps.apiTokens.verify(token);
    } catch (err) {
      if (err instanceof TokenError) return undefined;
      throw err;
    }
    if (!(await deps.apiTokens.active(verified.sub, verified.sid, verified.iat))) {
      deps.onRefused?.({ reason: "api_token_inactive", identity: verified.sub });
      throw exchangeRefused();
    }
    return tokens.issue(verified.sub, aud, {
      ...(verified.email === undefined ? {} : { email: verified.email }),
      ...(verified.sid === undefined ? {} : { sid: verified.sid }),
      lifetimeSeconds: registryCredentialSeconds,
      notAfter: verified.exp,
      // A narrowed API token's registry credential is as narrow.
      narrowing: {
        ...(verified.cap ? { cap: verified.cap } : {}),
        ...(verified.grp ? { grp: verified.grp } : {}),
      },
    });
  }

  /**
   * A narrowed token for the bearer of a Gatehouse API token (`gatehouse auth token
   * --capabilities --group`), or undefined if the bearer is not one: the same identity and
   * session, never living past the bearer, never wider than it (narrowFor).
   */
  async function narrowedFromApiToken(
    token: string,
    aud: string,
    asked: ReturnType<typeof parseNarrowing>,
  ) {
    if (!deps.apiTokens) return undefined;
    let verified: Awaited<ReturnType<TokenVerifier["verify"]>>;
    try {
      verified = await deps.apiTokens.verify(token);
    } catch (err) {
      if (err instanceof TokenError) return undefined;
      throw err;
    }
    if (!(await deps.apiTokens.active(verified.sub, verified.sid, verified.iat))) {
      deps.onRefused?.({ reason: "api_token_inactive", identity: verified.sub });
      throw exchangeRefused();
    }
    const from = narrowingOf(verified);
    const holder = { identityUid: verified.sub, ...(from ? { narrowing: from } : {}) };
    const narrowing = await narrowFor(deps.authorizer, holder, asked);
    return tokens.issue(verified.sub, aud, {
      ...(verified.email === undefined ? {} : { email: verified.email }),
      ...(verified.sid === undefined ? {} : { sid: verified.sid }),
      ...(registryAudiences.has(aud) ? { lifetimeSeconds: registryCredentialSeconds } : {}),
      notAfter: verified.exp,
      narrowing,
    });
  }

  const forIdentity = createIdentityMatcher({ store, oidc, config });

  /** Sign the bearer of `token` in: the person it names, written through the call's view. */
  async function login(
    token: string,
    writes: Pick<IamStore, "upsertPerson">,
  ): Promise<IdentityRecord> {
    let payload: JWTPayload;
    try {
      // Only trusted user issuers. The login provider's ID tokens are not taken here:
      // Gatehouse never hands them out, and one obtained elsewhere (a code of the login
      // provider redeemed by a provider that relayed the browser there: mix-up) must not sign
      // anyone in. People sign in through /oauth/authorize, where the answer's provider, state,
      // nonce and PKCE are checked.
      payload = await oidc.verify(token, { acceptIssuer: (iss) => trusted.has(iss) });
    } catch (err) {
      if (err instanceof OidcError) throw new Refused(`login_${err.reason}`);
      throw err;
    }
    const iss = payload.iss as string;
    const sub = payload.sub as string;
    // Without an audience check, a token any other client of the same issuer received would
    // log its bearer in as that person: a trusted user issuer's token names Gatehouse (the
    // base URL).
    const aud = typeof payload.aud === "string" ? [payload.aud] : (payload.aud ?? []);
    if (!aud.includes(config.baseUrl)) throw new Refused("login_bad_audience", iss);
    const claims = { ...payload, iss, sub };
    if (config.loginRequireVerifiedEmail && verifiedEmail(claims) === "") {
      throw new Refused("login_no_verified_email", iss);
    }
    return writes.upsertPerson(personLogin(claims, now()));
  }

  return {
    async exchange(req, ctx) {
      const store = storeOf(ctx);
      if (req.aud === "") throw invalidField("aud", "is required");
      if (!audiences.has(req.aud)) {
        throw invalidField("aud", "must be the base URL or the registry audience");
      }
      if (req.identity !== "" && !isUid(req.identity)) {
        throw invalidField("identity", "is not a valid uid");
      }
      const token = bearer(ctx.requestHeader.get("authorization"));
      if (token === undefined) throw unauthenticated("an OIDC token is required as the bearer");
      const narrowed = asksNarrowing(req);
      const asked = parseNarrowing(req);
      if (req.identity === "" && narrowed) {
        const credential = await narrowedFromApiToken(token, req.aud, asked);
        if (credential) {
          return create(ExchangeResponseSchema, {
            token: credential.token,
            expiry: timestampFromDate(credential.expiry),
          });
        }
      }
      if (req.identity === "" && !narrowed) {
        const credential = await registryCredential(token, req.aud);
        if (credential) {
          return create(ExchangeResponseSchema, {
            token: credential.token,
            expiry: timestampFromDate(credential.expiry),
          });
        }
      }
      let identity: IdentityRecord;
      try {
        identity =
          req.identity === "" ? await login(token, store) : await forIdentity(req.identity, token);
      } catch (err) {
        if (!(err instanceof Refused)) throw err;
        deps.onRefused?.({
          reason: err.reason,
          ...(req.identity === "" ? {} : { identity: req.identity }),
          ...(err.issuer === undefined ? {} : { issuer: err.issuer }),
        });
        throw exchangeRefused();
      }
      if (req.identity !== "") {
        try {
          await store.touchIdentity(identity.uid, now());
        } catch (err) {
          // Deleted between the match and now: as if it had never existed.
          if (isNotFound(err)) throw exchangeRefused();
          throw err;
        }
      }
      const narrowing = narrowed
        ? await narrowFor(deps.authorizer, { identityUid: identity.uid }, asked)
        : undefined;
      const issued = await tokens.issue(identity.uid, req.aud, {
        ...(identity.email === "" ? {} : { email: identity.email }),
        ...(narrowing ? { narrowing } : {}),
      });
      return create(ExchangeResponseSchema, {
        token: issued.token,
        expiry: timestampFromDate(issued.expiry),
      });
    },
  };
}

export { personUid };

function bearer(header: string | null): string | undefined {
  const m = header === null ? null : /^Bearer +(\S+) *$/i.exec(header);
  return m?.[1];
}

function isNotFound(err: unknown): boolean {
  return err instanceof StoreError && err.kind === "not_found";
}
