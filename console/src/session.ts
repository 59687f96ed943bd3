// The signed-in session: tokens in memory and sessionStorage only (gone with the tab), the
// browser sign-in (authorization code + PKCE against Gatehouse's own endpoints), refresh and
// sign-out (which revokes the session on the server).

interface Session {
  accessToken: string;
  /** Milliseconds since the epoch; 0 when unknown (a pasted token). */
  expiry: number;
  refreshToken?: string;
}

interface Endpoints {
  authorization_endpoint?: string;
  token_endpoint?: string;
  revocation_endpoint?: string;
  gatehouse_login_provider?: { name: string };
}

const sessionKey = "gatehouse.session";
const pendingKey = "gatehouse.signin";
const clientId = "gatehouse-console";
const redirectUri = `${location.origin}/console/`;

let current: Session | undefined = load();
let refreshing: Promise<string | undefined> | undefined;
let endpoints: Promise<Endpoints> | undefined;
const listeners = new Set<() => void>();

function load(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(sessionKey);
    return raw ? (JSON.parse(raw) as Session) : undefined;
  } catch {
    return undefined;
  }
}

function save(s: Session | undefined): void {
  current = s;
  if (s) sessionStorage.setItem(sessionKey, JSON.stringify(s));
  else sessionStorage.removeItem(sessionKey);
  for (const l of listeners) l();
}

/** Be told when the session starts or ends. */
export function onSessionChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function signedIn(): boolean {
  return current !== undefined;
}

/** The discovery document: which sign-in endpoints exist. */
export function discovery(): Promise<Endpoints> {
  endpoints ??= fetch("/.well-known/openid-configuration")
    .then((r) => (r.ok ? (r.json() as Promise<Endpoints>) : {}))
    .catch(() => ({}));
  return endpoints;
}

/** Sign in with a pasted token (a bootstrap token, or one from `gatehouse auth token`). */
export function signInWithToken(token: string): void {
  save({ accessToken: token.trim(), expiry: 0 });
}

function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/**
 * A provider the lookup found: its uid and name, the organization that declares it, and
 * whether DNS verified that organization's claim of the email's domain.
 */
export interface ProviderMatch {
  uid: string;
  name: string;
  organization: string;
  verified: boolean;
}

/**
 * The organizations' identity providers with exactly this name, or declaring this email
 * address's domain, from the server's lookup beside its authorization endpoint.
 */
export async function findProviders(by: "name" | "email", value: string): Promise<ProviderMatch[]> {
  const ep = await discovery();
  if (!ep.authorization_endpoint) throw new Error("this server offers no browser sign-in");
  const url = new URL(ep.authorization_endpoint.replace(/\/authorize$/, "/identity-providers"));
  url.searchParams.set(by, value);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`provider lookup: HTTP ${res.status}`);
  return ((await res.json()) as { identityProviders: ProviderMatch[] }).identityProviders;
}

/** Go to the identity provider (through Gatehouse); comes back to /console/ with a code. */
export async function startBrowserSignIn(identityProvider?: string): Promise<void> {
  const ep = await discovery();
  if (!ep.authorization_endpoint) throw new Error("this server offers no browser sign-in");
  const verifier = random();
  const state = random();
  const challenge = base64url(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))),
  );
  sessionStorage.setItem(pendingKey, JSON.stringify({ verifier, state }));
  const url = new URL(ep.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state,
    ...(identityProvider ? { identity_provider: identityProvider } : {}),
  }).toString();
  location.assign(url.href);
}

async function tokenRequest(form: Record<string, string>): Promise<Session> {
  const ep = await discovery();
  if (!ep.token_endpoint) throw new Error("this server has no token endpoint");
  const res = await fetch(ep.token_endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...form, client_id: clientId }),
  });
  const body = (await res.json()) as Record<string, string | number>;
  if (!res.ok) throw new Error(String(body.error_description || body.error || res.status));
  return {
    accessToken: String(body.access_token),
    expiry: Date.now() + Number(body.expires_in) * 1000,
    refreshToken: String(body.refresh_token),
  };
}

/**
 * Finish a browser sign-in when the page was opened by the redirect back: exchange the code
 * (if its state is ours) and clean the URL. Resolves to an error message, if any.
 */
export async function completeBrowserSignIn(): Promise<string | undefined> {
  const q = new URLSearchParams(location.search);
  if (!q.has("code") && !q.has("error")) return undefined;
  history.replaceState(null, "", "/console/");
  const pending = JSON.parse(sessionStorage.getItem(pendingKey) ?? "null") as {
    verifier: string;
    state: string;
  } | null;
  sessionStorage.removeItem(pendingKey);
  if (q.has("error")) return `Sign-in failed: ${q.get("error_description") ?? q.get("error")}`;
  if (!pending || q.get("state") !== pending.state)
    return "Sign-in failed: this answer is not for this tab";
  try {
    save(
      await tokenRequest({
        grant_type: "authorization_code",
        code: q.get("code") ?? "",
        code_verifier: pending.verifier,
        redirect_uri: redirectUri,
      }),
    );
    return undefined;
  } catch (err) {
    return `Sign-in failed: ${(err as Error).message}`;
  }
}

/** The access token, refreshed first when it expires within a minute. */
export async function currentToken(): Promise<string | undefined> {
  const s = current;
  if (!s) return undefined;
  if (!s.refreshToken || s.expiry === 0 || s.expiry - Date.now() > 60_000) return s.accessToken;
  refreshing ??= tokenRequest({ grant_type: "refresh_token", refresh_token: s.refreshToken })
    .then((next) => {
      save(next);
      return next.accessToken;
    })
    .catch(() => {
      save(undefined);
      return undefined;
    })
    .finally(() => {
      refreshing = undefined;
    });
  return refreshing;
}

/** Forget the tokens; a browser session is revoked on the server first. */
export async function signOut(): Promise<void> {
  const s = current;
  save(undefined);
  if (s?.refreshToken) {
    const ep = await discovery();
    if (ep.revocation_endpoint) {
      await fetch(ep.revocation_endpoint, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token: s.refreshToken, client_id: clientId }),
      }).catch(() => undefined);
    }
  }
}
