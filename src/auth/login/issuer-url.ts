// What an identity provider's URLs must be, apart from the OIDC client that dials them
// (upstream.ts): the API's handlers check them without loading an HTTP client.

/**
 * The redirect URI of a provider: `{auth_url}/oauth/callback` for the login provider,
 * `{auth_url}/oauth/idp-callback/{uid}` for an organization's. One per provider (the OAuth
 * security BCP's defence against mix-up): an answer is taken only at the callback of the
 * provider the login was sent to, and no provider can have another's answers sent to it. An
 * organization's is not under the login provider's, nor does the login provider's spell its
 * start: a login provider that accepts any path under (or starting with) its registered
 * redirect URI still cannot be made to send its code to an organization's callback, whose
 * provider would redeem it.
 */
export function callbackUri(authUrl: string, providerId: string): string {
  const base = `${authUrl.replace(/\/$/, "")}/oauth`;
  return providerId === "" ? `${base}/callback` : `${base}/idp-callback/${providerId}`;
}

/**
 * Whether an issuer can be one: an issuer names a discovery document at
 * `{issuer}/.well-known/openid-configuration`, never one itself (openid-client would take such
 * a URL as the document and skip its issuer check), and has no query or fragment.
 */
export function issuerShapeProblem(issuer: string): string | undefined {
  let u: URL;
  try {
    u = new URL(issuer);
  } catch {
    return "is not a URL";
  }
  if (u.search !== "" || issuer.includes("?")) return "must not have a query";
  if (u.hash !== "" || issuer.includes("#")) return "must not have a fragment";
  if (/\/\.well-known(\/|$)/i.test(u.pathname)) {
    return "must be the issuer, not a /.well-known/ document URL";
  }
  return undefined;
}
