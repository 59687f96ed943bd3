import type { FastifyPluginAsync } from "fastify";
import type { KeyRing } from "./keyring.js";

/** Options of wellKnownRoutes. */
export interface WellKnownOptions {
  /** The auth URL: `iss` of every token; the documents are served under its path. */
  authUrl: string;
  keyRing: Pick<KeyRing, "publicJwks">;
  /** The server-wide login provider's name as people see it; "" when there is none. */
  loginName?: string;
}

// Verifiers cache these; a rotated key is published at once and used for signing only after a
// refresh of the signing process's view, so a short max-age is enough.
const cacheControl = "public, max-age=300";

/**
 * Serve the OpenID Connect discovery document and the JWKS of Gatehouse tokens under the auth
 * URL's path: `{auth path}/.well-known/openid-configuration` and `…/jwks.json`.
 */
export const wellKnownRoutes: FastifyPluginAsync<WellKnownOptions> = async (app, opts) => {
  const authUrl = opts.authUrl.replace(/\/$/, "");
  const path = new URL(authUrl).pathname.replace(/\/$/, "");
  const discovery = JSON.stringify({
    issuer: authUrl,
    jwks_uri: `${authUrl}/.well-known/jwks.json`,
    // Tokens come from the STS exchange (not an RFC 8693 endpoint), served under the auth
    // URL's path as well as at the root.
    sts_endpoint: `${authUrl}/sts/exchange`,
    // People's sign-in (API.md "Authentication"): authorization code with PKCE S256 for
    // Gatehouse's own public clients.
    authorization_endpoint: `${authUrl}/oauth/authorize`,
    token_endpoint: `${authUrl}/oauth/token`,
    revocation_endpoint: `${authUrl}/oauth/revoke`,
    // The device flow (RFC 8628): `gatehouse auth login --headless`.
    device_authorization_endpoint: `${authUrl}/oauth/device_authorization`,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: [
      "authorization_code",
      "refresh_token",
      "urn:ietf:params:oauth:grant-type:device_code",
    ],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    authorization_response_iss_parameter_supported: true,
    scopes_supported: ["openid"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: ["ES256"],
    claims_supported: ["iss", "sub", "aud", "iat", "exp", "jti", "email", "sid"],
    // For sign-in pages: what the plain "sign in" button leads to (absent: no server-wide
    // login provider, only organizations' identity providers).
    ...(opts.loginName ? { gatehouse_login_provider: { name: opts.loginName } } : {}),
  });

  app.get(`${path}/.well-known/openid-configuration`, async (_req, reply) =>
    reply
      .header("cache-control", cacheControl)
      .header("content-type", "application/json")
      .send(discovery),
  );
  app.get(`${path}/.well-known/jwks.json`, async (_req, reply) =>
    reply
      .header("cache-control", cacheControl)
      .header("content-type", "application/json")
      .send(JSON.stringify(await opts.keyRing.publicJwks())),
  );
};
