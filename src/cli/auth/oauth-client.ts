import { CliError } from "../cli-io.js";

/** The endpoints of a Gatehouse server the CLI signs in with, from its discovery document. */
export interface Discovery {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  revocationEndpoint?: string;
  /** The device flow's endpoint (RFC 8628), for `auth login --headless`. */
  deviceAuthorizationEndpoint?: string;
  stsEndpoint: string;
  /** The server-wide login provider's name, when the server has one. */
  loginProvider?: string;
}

/** Read `{api}/.well-known/openid-configuration`. */
export async function discover(api: string): Promise<Discovery> {
  const url = `${api}/.well-known/openid-configuration`;
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    throw new CliError(`cannot reach ${api}: ${(err as Error).message}`, 1);
  }
  const doc = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  const field = (name: string) => (typeof doc?.[name] === "string" ? (doc[name] as string) : "");
  if (!res.ok || !doc || field("token_endpoint") === "" || field("authorization_endpoint") === "") {
    throw new CliError(
      `${url} is not a Gatehouse discovery document with sign-in endpoints (HTTP ${res.status})`,
      1,
    );
  }
  return {
    issuer: field("issuer"),
    authorizationEndpoint: field("authorization_endpoint"),
    tokenEndpoint: field("token_endpoint"),
    ...(field("revocation_endpoint") ? { revocationEndpoint: field("revocation_endpoint") } : {}),
    ...(field("device_authorization_endpoint")
      ? { deviceAuthorizationEndpoint: field("device_authorization_endpoint") }
      : {}),
    stsEndpoint: field("sts_endpoint") || `${api}/sts/exchange`,
    ...(loginProviderName(doc) ? { loginProvider: loginProviderName(doc) } : {}),
  };
}

function loginProviderName(doc: Record<string, unknown>): string {
  const p = doc.gatehouse_login_provider as { name?: unknown } | undefined;
  return typeof p?.name === "string" ? p.name : "";
}

/** An OAuth error answer of the token or revocation endpoint. */
export class TokenEndpointError extends Error {
  override name = "TokenEndpointError";
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(`${error}: ${description}`);
  }
}

/** What the token endpoint answered. */
export interface TokenSet {
  accessToken: string;
  refreshToken: string;
  expiry: Date;
}

/**
 * POST a form to the token (or revocation) endpoint. A token answer becomes a TokenSet; the
 * revocation endpoint's empty 200 an empty one. An OAuth error is a TokenEndpointError.
 */
export async function tokenRequest(
  endpoint: string,
  form: Record<string, string>,
): Promise<TokenSet> {
  let res: Response;
  try {
    res = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new CliError(`cannot reach ${new URL(endpoint).origin}: ${(err as Error).message}`, 1);
  }
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = (text === "" ? {} : JSON.parse(text)) as Record<string, unknown>;
  } catch {
    // Not the server's answer (a proxy's error page, another service): say what came back.
    throw new CliError(
      `${endpoint} answered HTTP ${res.status} with something that is not an OAuth answer`,
      1,
    );
  }
  if (!res.ok) {
    throw new TokenEndpointError(
      String(body.error ?? `http_${res.status}`),
      String(body.error_description ?? ""),
    );
  }
  if (form.grant_type !== undefined && typeof body.access_token !== "string") {
    throw new CliError(`${endpoint} answered without an access token`, 1);
  }
  return {
    accessToken: String(body.access_token ?? ""),
    refreshToken: String(body.refresh_token ?? ""),
    expiry: new Date(Date.now() + Number(body.expires_in ?? 0) * 1000),
  };
}
