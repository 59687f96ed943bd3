import { createHash } from "node:crypto";
import * as oidc from "openid-client";
import { createByteBudgetCache, parsedJsonBytes } from "../oidc/byte-budget-cache.js";
import { callbackUri, issuerShapeProblem } from "./issuer-url.js";
import { checkUpstreamClaims, type LoginClaims } from "./upstream-claims.js";
import { createUpstreamFetch } from "./upstream-fetch.js";

export { callbackUri, issuerShapeProblem } from "./issuer-url.js";
export type { LoginClaims } from "./upstream-claims.js";

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

/**
 * UpstreamError is a refused login answer. `reason` is generic and safe to show the browser;
 * `detail` says what happened (a network error, a claim) and goes to the log only: echoed to
 * the browser, it would make a provider's issuer a port scanner of the server's network.
 */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  constructor(
    readonly reason: string,
    /** The provider's own error code, when it sent a well-formed one (access_denied, ...). */
    readonly providerError?: string,
    readonly detail: string = reason,
  ) {
    super(reason);
  }
}

/** Options of createUpstream. */
export interface UpstreamOptions {
  /** Gatehouse's auth URL: each provider's redirect URI lies below it (callbackUri). */
  authUrl: string;
  /** Allow plain-http issuers on loopback addresses (tests and local development). */
  allowInsecureLoopback: boolean;
  /**
   * Let organizations' providers be on private or loopback addresses. Off, the server never
   * connects to one for them (the server-wide login provider is the operator's, and may be).
   */
  allowPrivateAddresses: boolean;
  /** How long a discovered configuration (metadata, JWKS) is used; default configurationTtlMs. */
  configurationTtlMs?: number;
  /** The most bytes kept configurations hold together; default configurationBudgetBytes. */
  configurationBudgetBytes?: number;
  /** The clock, in ms (tests move it). Default Date.now. */
  now?: () => number;
  /** Told what went wrong where a sign-in goes on without it (userinfo). */
  warn?: (fields: Record<string, unknown>, msg: string) => void;
}

/**
 * How long a failed discovery is remembered: until then, a login at that provider fails at
 * once with the same reason instead of asking the provider again. Without it, anyone could
 * make the server call out to a broken provider once per request to /oauth/authorize.
 */
export const discoveryRetryMs = 30_000;

/** How long a discovered configuration is used before it is discovered again: key rotations. */
export const configurationTtlMs = 10 * 60_000;

/** Configurations kept at once; the least recently used is forgotten first. */
const maxConfigurations = 256;

/**
 * The most bytes the kept configurations hold together (their discovery documents and JWKS,
 * as parsed: parsedJsonBytes), beyond which the least recently used are forgotten and
 * discovered again when next used. Each document is at most maxUpstreamBodyBytes on the wire,
 * but a hostile one parses to megabytes: 256 of them held over 500 MiB before this budget.
 */
export const configurationBudgetBytes = 32 * 1024 * 1024;

/**
 * Create Gatehouse's side of OpenID Connect as a client (openid-client): discovery, the
 * authorization URL with PKCE S256, state and nonce, and the code exchange, whose ID token is
 * checked for issuer, audience (the client ID), signature (the provider's JWKS), expiry and
 * nonce. Every document is read through a capped fetch; discovered configurations are kept
 * for configurationTtlMs per provider setting, a failed discovery for discoveryRetryMs, all
 * within configurationBudgetBytes and maxConfigurations (least recently used out first).
 */
export function createUpstream(opts: UpstreamOptions) {
  const now = opts.now ?? Date.now;
  const ttlMs = opts.configurationTtlMs ?? configurationTtlMs;
  const anyFetch = createUpstreamFetch({ publicOnly: false });
  const publicFetch = createUpstreamFetch({ publicOnly: !opts.allowPrivateAddresses });
  // Each provider setting's discovery, bounded by bytes, count and time.
  const configurations = createByteBudgetCache<Promise<oidc.Configuration>>({
    maxBytes: opts.configurationBudgetBytes ?? configurationBudgetBytes,
    maxEntries: maxConfigurations,
    now,
  });

  function configuration(p: LoginProvider): Promise<oidc.Configuration> {
    // Keyed by everything that changes the client; the secret only as a hash.
    const key = [
      p.id,
      p.issuer,
      p.clientId,
      createHash("sha256").update(p.clientSecret).digest("hex"),
    ].join("\n");
    const known = configurations.get(key);
    if (known) return known;
    const config = discover(p, key);
    // Its documents count as they arrive (discover's fetch grows the entry).
    configurations.set(key, config, 0, now() + ttlMs);
    // A failure is kept, and answered, until it may be tried again.
    config.catch(() => configurations.expire(key, now() + discoveryRetryMs));
    return config;
  }

  // The fetch of one configuration: what it keeps (the discovery document, the JWKS; plain
  // GETs, unlike the token request and userinfo, which carry credentials and are not kept)
  // counts against the cache's budget, under its key.
  function keptFetch(base: typeof anyFetch, key: string): typeof anyFetch {
    return async (url, init = {}) => {
      const res = await base(url, init);
      const credentials = Object.keys(init.headers ?? {}).some(
        (h) => h.toLowerCase() === "authorization",
      );
      if ((init.method ?? "GET") === "GET" && !credentials) {
        configurations.grow(key, parsedJsonBytes(await res.clone().text()));
      }
      return res;
    };
  }

  async function discover(p: LoginProvider, key: string): Promise<oidc.Configuration> {
    const shape = issuerShapeProblem(p.issuer);
    if (shape) throw new Error(`the issuer ${shape}`);
    const issuer = new URL(p.issuer);
    const insecure =
      opts.allowInsecureLoopback && issuer.protocol === "http:" && isLoopback(issuer);
    const config = await oidc.discovery(
      issuer,
      p.clientId,
      p.clientSecret === "" ? undefined : p.clientSecret,
      p.clientSecret === "" ? oidc.None() : oidc.ClientSecretPost(p.clientSecret),
      {
        timeout: 10,
        [oidc.customFetch]: keptFetch(p.id === "" ? anyFetch : publicFetch, key),
        ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
      },
    );
    // The document must speak for the very issuer configured, character for character: the
    // ID tokens' iss is checked against it.
    const discovered = config.serverMetadata().issuer;
    // The login provider's setting is read with any trailing "/" dropped (config.ts): its
    // issuer may be either.
    const configured = p.id === "" ? [p.issuer, `${p.issuer}/`] : [p.issuer];
    if (!configured.includes(discovered)) {
      throw new Error(
        `the discovery document names the issuer ${JSON.stringify(discovered.slice(0, 200))}, not the configured one`,
      );
    }
    // The ID token's signature is checked against the provider's JWKS, not only trusted
    // because it came over TLS from the token endpoint.
    oidc.enableNonRepudiationChecks(config);
    return config;
  }

  async function reachable(p: LoginProvider): Promise<oidc.Configuration> {
    try {
      return await configuration(p);
    } catch (err) {
      throw new UpstreamError(
        "the identity provider cannot be reached",
        undefined,
        `discovery failed: ${describe(err)}`,
      );
    }
  }

  // Name and email from userinfo when the ID token has none: many providers put only `sub`
  // in the ID token by default and the rest behind the access token.
  async function withUserinfo(
    config: oidc.Configuration,
    p: LoginProvider,
    claims: Record<string, unknown>,
    accessToken: string | undefined,
  ): Promise<Record<string, unknown>> {
    const lacks = claims.email === undefined || claims.name === undefined;
    if (!lacks || !accessToken || !config.serverMetadata().userinfo_endpoint) return claims;
    try {
      // The subject must be the ID token's: openid-client refuses any other.
      const info = (await oidc.fetchUserInfo(config, accessToken, claims.sub as string)) as Record<
        string,
        unknown
      >;
      const merged = { ...claims };
      if (merged.name === undefined && info.name !== undefined) merged.name = info.name;
      if (merged.email === undefined && info.email !== undefined) {
        merged.email = info.email;
        merged.email_verified = info.email_verified;
      }
      return merged;
    } catch (err) {
      // The ID token alone signs the person in, as before.
      opts.warn?.({ provider: p.id, detail: describe(err) }, "userinfo not read");
      return claims;
    }
  }

  return {
    /** The bytes the kept configurations hold (after forgetting the expired ones). */
    heldBytes: () => configurations.heldBytes(),

    /** Where to send the person's browser, and the checks its answer must pass. */
    async start(p: LoginProvider): Promise<LoginStart> {
      const config = await reachable(p);
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const codeVerifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: callbackUri(opts.authUrl, p.id),
        scope: ["openid", "email", "profile", ...p.scopes].join(" "),
        response_type: "code",
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: "S256",
        state,
        nonce,
      });
      return { url, state, nonce, codeVerifier };
    },

    /**
     * Complete a login from the provider's answer at its callback URL (callbackUri). Where the
     * provider advertises `authorization_response_iss_parameter_supported`, the answer must
     * carry `iss` and it must be the provider's issuer (RFC 9207; openid-client checks both).
     */
    async finish(
      p: LoginProvider,
      callbackUrl: URL,
      checks: { state: string; nonce: string; codeVerifier: string },
    ): Promise<LoginClaims> {
      const providerError = callbackUrl.searchParams.get("error");
      if (providerError !== null) {
        // Only a well-formed error code is repeated (RFC 6749 4.1.2.1); its description never.
        const code = /^[a-z_]{1,64}$/.test(providerError) ? providerError : "invalid_response";
        throw new UpstreamError(
          `the identity provider refused the login: ${code}`,
          code,
          `provider error ${JSON.stringify(providerError.slice(0, 100))}`,
        );
      }
      const config = await reachable(p);
      let claims: Record<string, unknown>;
      try {
        const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const idClaims = tokens.claims();
        if (!idClaims) {
          throw new UpstreamError(
            "the identity provider's answer was refused",
            undefined,
            "no ID token",
          );
        }
        claims = await withUserinfo(config, p, { ...idClaims }, tokens.access_token);
      } catch (err) {
        if (err instanceof UpstreamError) throw err;
        throw new UpstreamError(
          "the identity provider's answer was refused",
          undefined,
          describe(err),
        );
      }
      const problem = checkUpstreamClaims(claims);
      if (problem) {
        throw new UpstreamError("the identity provider's answer was refused", undefined, problem);
      }
      return claims as unknown as LoginClaims;
    },
  };
}

/** Upstream is Gatehouse as an OpenID Connect client. */
export type Upstream = ReturnType<typeof createUpstream>;

function isLoopback(url: URL): boolean {
  return url.hostname === "127.0.0.1" || url.hostname === "[::1]" || url.hostname === "localhost";
}

/** A short description of an openid-client failure, for the log: no response bodies. */
function describe(err: unknown): string {
  if (err instanceof oidc.ResponseBodyError) return err.error_description ?? err.error;
  if (err instanceof oidc.AuthorizationResponseError) return err.error_description ?? err.error;
  if (err instanceof Error) {
    // openid-client's own error names the class of failure; its cause, which claim or socket.
    const cause = err.cause instanceof Error ? err.cause.message : "";
    return cause === "" || cause === err.message ? err.message : `${err.message} (${cause})`;
  }
  return "unknown error";
}
