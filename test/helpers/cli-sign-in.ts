import { createHash, randomBytes } from "node:crypto";

// The client side of a person's sign-in as the CLI runs it against Gatehouse's /oauth
// endpoints (authorization code with PKCE, public client "gatehouse-cli"): the requests
// the sign-in suites send, written once.

/** The redirect URI of the tests' sign-ins: a loopback callback, as the CLI's. */
export const cliRedirect = "http://127.0.0.1:53682/callback";

/** A PKCE pair: the verifier the client keeps and the S256 challenge it sends. */
export interface Pkce {
  verifier: string;
  challenge: string;
}

/** A new PKCE pair. */
export function newPkce(): Pkce {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/**
 * Gatehouse's /oauth/authorize URL at `baseUrl` for a CLI sign-in with `challenge`; `extra`
 * adds or replaces parameters (`identity_provider`, `state`: "s" unless given).
 */
export function cliAuthorizeUrl(
  baseUrl: string,
  challenge: string,
  extra: Record<string, string> = {},
): string {
  const q = new URLSearchParams({
    response_type: "code",
    client_id: "gatehouse-cli",
    redirect_uri: cliRedirect,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "s",
    ...extra,
  });
  return `${baseUrl}/oauth/authorize?${q}`;
}

/** Trade an authorization code for tokens at `baseUrl`'s /oauth/token, as the CLI does. */
export function redeemCode(baseUrl: string, code: string, verifier: string): Promise<Response> {
  return fetch(`${baseUrl}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      redirect_uri: cliRedirect,
      client_id: "gatehouse-cli",
    }),
  });
}
