import { createHash } from "node:crypto";
import * as oidc from "openid-client";

/** A provider people sign in through: the server's own, or an organization's IdentityProvider. */
export interface LoginProvider {
  /** "" for the server's login provider, else the IdentityProvider's uid. */
  id: string;
  issuer: string;
  clientId: string;
  /** "" for a public client (no client authentication). Never logged, never returned. */
  clientSecret: string;
  scopes: readonly string[];
}

/** What Gatehouse sends with a login and must check the answer against. */
export interface LoginStart {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The ID token's claims that Gatehouse uses, after openid-client validated it. */
export interface LoginClaims {
  iss: string;
  sub: string;
  name?: unknown;
  email?: unknown;
  email_verified?: unknown;
}

/** UpstreamError is a refused login answer; `reason` is safe to show and to log. */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  constructor(
    readonly reason: string,
    /** The provider's own error code, when it sent one (access_denied, ...). */
    readonly providerError?: string,
  ) {
    super(reason);
  }
}

/** Options of createUpstream. */
export interface UpstreamOptions {
  /** Gatehouse's callback, registered at every provider: `{auth_url}/oauth/callback`. */
  redirectUri: string;
  /** Allow plain-http issuers on loopback addresses (tests and local development). */
  allowInsecureLoopback: boolean;
  /** The clock, in ms (tests move it). Default Date.now. */
  now?: () => number;
}

/**
 * How long a failed discovery is remembered: until then, a login at that provider fails at
 * once with the same reason instead of asking the provider again. Without it, anyone could
 * make the server call out to a broken provider once per request to /oauth/authorize.
 */
export const discoveryRetryMs = 30_000;

/**
 * Create Gatehouse's side of OpenID Connect as a client (openid-client): discovery, the
 * authorization URL with PKCE S256, state and nonce, and the code exchange, whose ID token is
 * checked for issuer, audience (the client ID), signature (the provider's JWKS), expiry and
 * nonce. Discovered configurations are kept per provider setting; a failed discovery for
 * discoveryRetryMs.
 */
export function createUpstream(opts: UpstreamOptions) {
  const now = opts.now ?? Date.now;
  // Each provider setting's discovery; a failed one says until when its failure stands.
  const configurations = new Map<
    string,
    { config: Promise<oidc.Configuration>; failedUntil?: number }
  >();

  function configuration(p: LoginProvider): Promise<oidc.Configuration> {
    // Keyed by everything that changes the client; the secret only as a hash.
    const key = [
      p.issuer,
      p.clientId,
      createHash("sha256").update(p.clientSecret).digest("hex"),
    ].join("\n");
    const known = configurations.get(key);
    if (known && (known.failedUntil === undefined || now() < known.failedUntil)) {
      return known.config;
    }
    const entry: { config: Promise<oidc.Configuration>; failedUntil?: number } = {
      config: discover(p),
    };
    // The failure is kept, and answered, until it may be tried again.
    entry.config.catch(() => {
      entry.failedUntil = now() + discoveryRetryMs;
    });
    configurations.delete(key);
    configurations.set(key, entry);
    // A bounded cache: providers are few, settings change rarely.
    if (configurations.size > 1000) {
      configurations.delete(configurations.keys().next().value as string);
    }
    return entry.config;
  }

  async function discover(p: LoginProvider): Promise<oidc.Configuration> {
    const issuer = new URL(p.issuer);
    const insecure =
      opts.allowInsecureLoopback && issuer.protocol === "http:" && isLoopback(issuer);
    const config = await oidc.discovery(
      issuer,
      p.clientId,
      p.clientSecret === "" ? undefined : p.clientSecret,
      p.clientSecret === "" ? oidc.None() : oidc.ClientSecretPost(p.clientSecret),
      { timeout: 10, ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}) },
    );
    // The ID token's signature is checked against the provider's JWKS, not only trusted
    // because it came over TLS from the token endpoint.
    oidc.enableNonRepudiationChecks(config);
    return config;
  }

  return {
    /** Where to send the person's browser, and the checks its answer must pass. */
    async start(p: LoginProvider): Promise<LoginStart> {
      let config: oidc.Configuration;
      try {
        config = await configuration(p);
      } catch (err) {
        throw new UpstreamError(`the identity provider cannot be reached: ${describe(err)}`);
      }
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const codeVerifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: opts.redirectUri,
        scope: ["openid", "email", "profile", ...p.scopes].join(" "),
        response_type: "code",
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: "S256",
        state,
        nonce,
      });
      return { url, state, nonce, codeVerifier };
    },

    /** Complete a login from the provider's answer at the callback URL. */
    async finish(
      p: LoginProvider,
      callbackUrl: URL,
      checks: { state: string; nonce: string; codeVerifier: string },
    ): Promise<LoginClaims> {
      const providerError = callbackUrl.searchParams.get("error");
      if (providerError !== null) {
        throw new UpstreamError(
          `the identity provider refused the login: ${providerError}`,
          providerError,
        );
      }
      let config: oidc.Configuration;
      try {
        config = await configuration(p);
      } catch (err) {
        throw new UpstreamError(`the identity provider cannot be reached: ${describe(err)}`);
      }
      try {
        const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const claims = tokens.claims();
        if (!claims) throw new UpstreamError("the identity provider sent no ID token");
        return claims as unknown as LoginClaims;
      } catch (err) {
        if (err instanceof UpstreamError) throw err;
        throw new UpstreamError(`the identity provider's answer was refused: ${describe(err)}`);
      }
    },
  };
}

/** Upstream is Gatehouse as an OpenID Connect client. */
export type Upstream = ReturnType<typeof createUpstream>;

function isLoopback(url: URL): boolean {
  return url.hostname === "127.0.0.1" || url.hostname === "[::1]" || url.hostname === "localhost";
}

/** A short description of an openid-client failure: its message, without response bodies. */
function describe(err: unknown): string {
  if (err instanceof oidc.ResponseBodyError) return err.error_description ?? err.error;
  if (err instanceof oidc.AuthorizationResponseError) return err.error_description ?? err.error;
  if (err instanceof Error) {
    // openid-client's own error names the class of failure; its cause, which claim.
    const cause = err.cause instanceof Error ? err.cause.message : "";
    return cause === "" || cause === err.message ? err.message : `${err.message} (${cause})`;
  }
  return "unknown error";
}
