import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJwt, exportJWK, generateKeyPair, importJWK, type JWTPayload, SignJWT } from "jose";
import Provider from "oidc-provider";

/** A person the test identity provider knows: their account id is the subject. */
export interface IdpPerson {
  name?: string;
  email?: string;
  email_verified?: boolean;
}

/** A real, certified OpenID Provider (panva's oidc-provider) on 127.0.0.1, for sign-in tests. */
export interface TestIdp {
  /** The issuer, http://127.0.0.1:<port>. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /**
   * Rewrite the claims of the ID tokens the token endpoint answers with, re-signed with the
   * provider's own key (what a compromised or confused provider would send); undefined stops.
   */
  tamperIdToken(change: ((claims: JWTPayload) => JWTPayload) | undefined): void;
  /**
   * Register these redirect URIs for the client instead (an organization's provider gets its
   * callback's uid only once created). The provider starts over: sessions are forgotten.
   */
  setRedirectUris(uris: string[]): void;
  close(): Promise<void>;
}

/** Options of startTestIdp. */
export interface TestIdpOptions {
  /** The redirect URI registered for the client: Gatehouse's `{auth_url}/oauth/callback`. */
  redirectUri: string;
  people: Record<string, IdpPerson>;
  /**
   * Put the scopes' claims in the ID token even with an access token (the default here), or
   * only `sub`, as oidc-provider does by default (true): the rest is at userinfo.
   */
  conformIdTokenClaims?: boolean;
  /**
   * Send no `iss` in authorization responses and advertise none (RFC 9207), as many
   * providers still do; oidc-provider sends it by default.
   */
  omitIss?: boolean;
  clientId?: string;
  clientSecret?: string;
}

/**
 * Start an OpenID Provider with one confidential client (client_secret_post) whose redirect is
 * Gatehouse's callback. Its development login and consent pages are what a test's "browser"
 * fills in: any account id logs in, no password (see signInAtIdp).
 */
export async function startTestIdp(opts: TestIdpOptions): Promise<TestIdp> {
  const http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const clientId = opts.clientId ?? "gatehouse";
  const clientSecret = opts.clientSecret ?? "test-secret-of-the-idp-client";
  let tamper: ((claims: JWTPayload) => JWTPayload) | undefined;
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: "test-idp-1", alg: "ES256", use: "sig" };
  const signingKey = await importJWK(jwk, "ES256");
  let redirectUris = [opts.redirectUri];
  const build = () => {
    const provider = new Provider(issuer, {
      jwks: { keys: [jwk] },
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: redirectUris,
          grant_types: ["authorization_code"],
          response_types: ["code"],
          token_endpoint_auth_method: "client_secret_post",
          id_token_signed_response_alg: "ES256",
        },
      ],
      claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
      // By default here, ID tokens carry the claims themselves.
      conformIdTokenClaims: opts.conformIdTokenClaims ?? false,
      cookies: { keys: ["test-idp-cookie-key"] },
      ttl: {
        AccessToken: 600,
        AuthorizationCode: 60,
        Grant: 600,
        IdToken: 600,
        Interaction: 600,
        Session: 600,
      },
      features: { devInteractions: { enabled: true } },
      async findAccount(_ctx, id) {
        const person = opts.people[id];
        if (!person) return undefined;
        return { accountId: id, claims: async () => ({ sub: id, ...person }) };
      },
    });
    // The development interactions warn on every start; the tests know.
    provider.on("server_error", () => {});
    return provider.callback();
  };
  let handle: ReturnType<typeof build> | undefined;
  http.on("request", (req, res) => {
    handle ??= build();
    if (opts.omitIss) withoutIss(req.url ?? "", res);
    if (tamper && req.method === "POST" && req.url?.startsWith("/token")) {
      const change = tamper;
      const end = res.end.bind(res) as (body?: unknown) => typeof res;
      res.end = ((body?: unknown) => {
        void (async () => {
          const json = JSON.parse(String(body)) as { id_token?: string };
          if (json.id_token) {
            json.id_token = await new SignJWT(change(decodeJwt(json.id_token)))
              .setProtectedHeader({ alg: "ES256", kid: jwk.kid, typ: "JWT" })
              .sign(signingKey);
          }
          const text = JSON.stringify(json);
          if (!res.headersSent) res.setHeader("content-length", Buffer.byteLength(text));
          end(text);
        })();
        return res;
      }) as typeof res.end;
    }
    handle(req, res);
  });
  return {
    issuer,
    clientId,
    clientSecret,
    tamperIdToken(change) {
      tamper = change;
    },
    setRedirectUris(uris) {
      redirectUris = uris;
      handle = undefined;
    },
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/** A browser's cookies: by host, name to value. */
export type CookieJar = Map<string, Map<string, string>>;

/** The Cookie header a browser holding `jar` sends to `url`. */
export function cookieHeaderOf(jar: CookieJar, url: URL): string {
  return [...(jar.get(url.host) ?? new Map<string, string>())]
    .map(([k, v]) => `${k}=${v}`)
    .join("; ");
}

/**
 * What a person's browser does: follow redirects from `startUrl`, carrying cookies per host
 * (in `jar`, a fresh one unless given: a browser that goes on), and fill in the identity
 * provider's login (as `account`) and consent forms, until a redirect leaves for `stopAt` (the
 * client's redirect URI). Returns that final URL, unvisited.
 */
export async function signInAtIdp(
  startUrl: string,
  account: string,
  stopAt: string,
  jar: CookieJar = new Map(),
): Promise<URL> {
  const cookieHeader = (url: URL) => cookieHeaderOf(jar, url);
  const remember = (url: URL, res: Response) => {
    const cookies = jar.get(url.host) ?? new Map<string, string>();
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";", 1);
      const eq = pair?.indexOf("=") ?? -1;
      if (!pair || eq <= 0) continue;
      // Max-Age=0 clears a cookie, as a browser does.
      if (/;\s*max-age=0(;|$)/i.test(line)) cookies.delete(pair.slice(0, eq));
      else cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    jar.set(url.host, cookies);
  };
  let url = new URL(startUrl);
  let body: URLSearchParams | undefined;
  for (let hop = 0; hop < 20; hop++) {
    if (url.href.startsWith(stopAt)) return url;
    const res = await fetch(url, {
      method: body ? "POST" : "GET",
      redirect: "manual",
      headers: {
        cookie: cookieHeader(url),
        ...(body ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      },
      ...(body ? { body } : {}),
    });
    remember(url, res);
    body = undefined;
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url);
      continue;
    }
    const html = await res.text();
    if (res.status !== 200)
      throw new Error(`sign-in stopped at ${url.href}: ${res.status} ${html}`);
    // The provider's development pages: a login form, then a consent form.
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`no form at ${url.href}: ${html.slice(0, 500)}`);
    body = new URLSearchParams({ prompt, ...(prompt === "login" ? { login: account } : {}) });
    url = new URL(action.replace(/&amp;/g, "&"), url);
  }
  throw new Error("sign-in did not finish in 20 steps");
}

// Rewrite what oidc-provider answers as a provider without RFC 9207 would: redirects without
// `iss`, discovery without authorization_response_iss_parameter_supported.
function withoutIss(url: string, res: import("node:http").ServerResponse): void {
  const setHeader = res.setHeader.bind(res);
  res.setHeader = ((name: string, value: number | string | readonly string[]) => {
    if (name.toLowerCase() === "location" && typeof value === "string" && /^https?:/.test(value)) {
      const u = new URL(value);
      u.searchParams.delete("iss");
      return setHeader(name, u.href);
    }
    return setHeader(name, value);
  }) as typeof res.setHeader;
  if (!url.startsWith("/.well-known/openid-configuration")) return;
  const end = res.end.bind(res) as (body?: unknown) => typeof res;
  res.end = ((body?: unknown) => {
    if (body === undefined || body === null) return end(body);
    const doc = JSON.parse(String(body)) as Record<string, unknown>;
    delete doc.authorization_response_iss_parameter_supported;
    const text = JSON.stringify(doc);
    if (!res.headersSent) setHeader("content-length", Buffer.byteLength(text));
    return end(text);
  }) as typeof res.end;
}
