import type { JWTPayload } from "jose";
import { matchClaims, matchIssuer } from "../../auth/claim-match.js";
import { OidcError } from "../../auth/oidc/oidc-error.js";
import type { OidcVerifier } from "../../auth/oidc/oidc-verifier.js";
import type { Config } from "../../config.js";
import type { IamStore, IdentityRecord } from "../../store/iam-store.js";

/** A refusal with the reason kept for the log; the caller sees exchangeRefused(). */
export class Refused extends Error {
  constructor(
    readonly reason: string,
    readonly issuer?: string,
  ) {
    super(reason);
  }
}

/** What matching a workload's token to an identity needs. */
export interface IdentityMatchDeps {
  store: Pick<IamStore, "getIdentity">;
  oidc: OidcVerifier;
  config: Pick<Config, "baseUrl">;
}

/**
 * Create the check the STS exchange and the registry token endpoint share: does this OIDC
 * token (a workload's) satisfy the claimMatch or staticKeys of identity `uid`? Resolves to
 * the identity, or throws Refused (the reason is for the log, never for the caller).
 */
export function createIdentityMatcher(deps: IdentityMatchDeps) {
  const { store, oidc, config } = deps;
  async function forIdentity(uid: string, token: string): Promise<IdentityRecord> {
    const identity = await store.getIdentity(uid);
    if (!identity) {
      // As much work as checking the token for an identity that exists: the refusal must not
      // tell, by its timing, whether the identity does.
      await oidc.decoy(token);
      throw new Refused("unknown_identity");
    }
    const payload = await verified(token, identity);
    if (identity.claimMatch) {
      if (!matchClaims(identity.claimMatch, payload, config.baseUrl)) {
        throw new Refused("claims_mismatch", payload.iss);
      }
    } else if (identity.staticKeys) {
      // staticKeys names no audience: the default of a claimMatch (the base URL) applies.
      const aud = typeof payload.aud === "string" ? [payload.aud] : (payload.aud ?? []);
      if (payload.sub !== identity.staticKeys.subject || !aud.includes(config.baseUrl)) {
        throw new Refused("claims_mismatch", payload.iss);
      }
    }
    return identity;
  }

  async function verified(token: string, identity: IdentityRecord): Promise<JWTPayload> {
    const { claimMatch: cm, staticKeys: sk } = identity;
    try {
      if (cm) {
        // Only the issuers the identity names are ever contacted.
        return await oidc.verify(token, { acceptIssuer: (iss) => matchIssuer(cm, iss) });
      }
      if (sk) {
        return await oidc.verifyWithStaticKeys(token, {
          issuer: sk.issuer,
          issuerKeysJson: sk.issuerKeys,
          expirationTime: new Date(sk.expirationTime),
        });
      }
    } catch (err) {
      if (err instanceof OidcError) throw new Refused(err.reason);
      throw err;
    }
    // A person's root identity is reached by logging in, never by naming it.
    throw new Refused("no_exchange_method");
  }

  return forIdentity;
}
