import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { ConnectError } from "@connectrpc/connect";
import { CliError, type CliIo } from "../cli-io.js";
import {
  forgetLogin,
  loadLogin,
  type StoredLogin,
  saveLogin,
  withCredentialsLock,
} from "./credentials.js";
import { type Discovery, discover, TokenEndpointError, tokenRequest } from "./oauth-client.js";
import { identityProviderUid } from "./provider-lookup.js";

/** Options every `gatehouse auth` command takes: the API it talks to. */
export interface AuthOptions {
  /** The server's base URL (`--api`, env GATEHOUSE_API). */
  api: string;
}

/** `gatehouse auth login` options. */
export interface LoginOptions extends AuthOptions {
  /**
   * An organization's IdentityProvider: uid, name, or email domain (identityProviderUid);
   * absent: the server's login provider.
   */
  identityProvider?: string;
  /** false with --no-browser: print the URL instead of opening it. */
  browser: boolean;
  /** --headless: the device flow (a code approved on any device), no local browser. */
  headless?: boolean;
  /** With identityToken: the workload flow (STS exchange) for this identity uid. */
  identity?: string;
  /** A file holding an OIDC token for the workload flow. */
  identityToken?: string;
}

/** Exit code for "not logged in". */
export const notLoggedIn = 3;

/** A token this close to its expiry is refreshed first. */
const refreshMarginMs = 60_000;

/** `gatehouse auth login`: sign in and store the tokens. */
export async function authLogin(opts: LoginOptions, io: CliIo): Promise<number> {
  const api = normalizeApi(opts.api);
  if ((opts.identity === undefined) !== (opts.identityToken === undefined)) {
    throw new CliError("--identity and --identity-token go together");
  }
  if (opts.identity !== undefined && opts.headless) {
    throw new CliError("--headless is for people; --identity logs a workload in");
  }
  if (opts.identity !== undefined && opts.identityProvider !== undefined) {
    throw new CliError("--identity-provider is for people; --identity logs a workload in");
  }
  const discovery = await discover(api);
  let login: StoredLogin;
  if (opts.identity !== undefined && opts.identityToken !== undefined) {
    login = await workloadExchange(api, discovery, opts.identity, resolve(opts.identityToken));
  } else {
    if (opts.identityProvider === undefined && !discovery.loginProvider) {
      throw new CliError(
        `${api} has no login provider for people: sign in through an organization's with ` +
          "--identity-provider <name|domain|uid>, or ask its operator to set GATEHOUSE_LOGIN_ISSUER",
        1,
      );
    }
    const provider =
      opts.identityProvider === undefined
        ? undefined
        : await identityProviderUid(discovery, opts.identityProvider, io);
    const tokens = opts.headless
      ? await (await import("./device-login.js")).deviceLogin({
          discovery,
          ...(provider === undefined ? {} : { identityProvider: provider }),
          io,
        })
      : await (await import("./browser-login.js")).browserLogin({
          api,
          discovery,
          ...(provider === undefined ? {} : { identityProvider: provider }),
          browser: opts.browser,
          io,
        });
    login = {
      kind: "person",
      identity: "",
      accessToken: tokens.accessToken,
      expiry: tokens.expiry.toISOString(),
      refreshToken: tokens.refreshToken,
      tokenEndpoint: discovery.tokenEndpoint,
      ...(discovery.revocationEndpoint ? { revocationEndpoint: discovery.revocationEndpoint } : {}),
    };
  }
  const caller = await getCaller(api, login.accessToken);
  login.identity = caller.identity?.uid ?? login.identity;
  saveLogin(io.env, api, login);
  io.out(`Logged in to ${api} as ${describeIdentity(caller.identity)}\n`);
  return 0;
}

/** `gatehouse auth token` options: with either, a narrowed token is minted. */
export interface TokenOptions extends AuthOptions {
  /** Only these capabilities (`--capabilities a,b`). */
  capabilities?: string[];
  /** Only within this group's subtree (`--group <uid>`). */
  group?: string;
}

/**
 * `gatehouse auth token`: print a valid API token, refreshing it when needed; with
 * `--capabilities` or `--group`, a token narrowed to them, minted by the STS exchange from
 * the login's token (never wider than it, and no longer-lived).
 */
export async function authToken(opts: TokenOptions, io: CliIo): Promise<number> {
  const token = await apiToken(opts.api, io);
  const caps = opts.capabilities ?? [];
  if (caps.length === 0 && opts.group === undefined) {
    io.out(`${token}\n`);
    return 0;
  }
  const api = normalizeApi(opts.api);
  const discovery = await discover(api);
  const url = new URL(discovery.stsEndpoint);
  url.searchParams.set("aud", api);
  for (const c of caps) url.searchParams.append("cap", c);
  if (opts.group !== undefined) url.searchParams.set("group", opts.group);
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  } catch (err) {
    throw new CliError(`cannot reach ${url.origin}: ${(err as Error).message}`, 1);
  }
  const body = (await res.json().catch(() => ({}))) as { token?: string; message?: string };
  if (!res.ok || !body.token) {
    throw new CliError(
      `the narrowed token was refused: ${body.message ?? `HTTP ${res.status}`}`,
      1,
    );
  }
  io.out(`${body.token}\n`);
  return 0;
}

/** `gatehouse auth status`: who is logged in, and where they hold roles. */
export async function authStatus(opts: AuthOptions, io: CliIo): Promise<number> {
  const api = normalizeApi(opts.api);
  const token = await apiToken(api, io);
  const caller = await getCaller(api, token);
  const stored = io.env.GATEHOUSE_TOKEN ? undefined : loadLogin(io.env, api);
  io.out(`Logged in to ${api} as ${describeIdentity(caller.identity)}\n`);
  if (stored) {
    io.out(`  token from: ${stored.kind === "person" ? "browser sign-in" : "workload exchange"}`);
    io.out(`, expires ${stored.expiry}\n`);
  } else {
    io.out("  token from: GATEHOUSE_TOKEN\n");
  }
  if (caller.roleBindings.length === 0) io.out("  no role bindings\n");
  for (const b of caller.roleBindings) {
    io.out(`  ${b.role?.name ?? b.roleUid} at ${b.group?.name ?? "?"} (${b.group?.uid ?? "?"})\n`);
  }
  return 0;
}

/** `gatehouse auth logout`: revoke the refresh token and forget the stored tokens. */
export async function authLogout(opts: AuthOptions, io: CliIo): Promise<number> {
  const api = normalizeApi(opts.api);
  const stored = loadLogin(io.env, api);
  if (!stored) {
    io.out(`Not logged in to ${api}\n`);
    return 0;
  }
  if (stored.refreshToken && stored.revocationEndpoint) {
    try {
      await tokenRequest(stored.revocationEndpoint, {
        token: stored.refreshToken,
        client_id: "gatehouse-cli",
      });
    } catch (err) {
      // The local copy goes anyway; say the server could not be told.
      io.err(`gatehouse auth logout: could not revoke the session: ${(err as Error).message}\n`);
    }
  }
  forgetLogin(io.env, api);
  io.out(`Logged out of ${api}\n`);
  return 0;
}

/**
 * A valid API token for `api`: GATEHOUSE_TOKEN from the environment when set, else the stored
 * one, refreshed when it has expired (or is about to). Throws a CliError with exit code 3 when
 * not logged in or when the session has ended.
 */
export async function apiToken(api: string, io: CliIo): Promise<string> {
  const fromEnv = io.env.GATEHOUSE_TOKEN;
  if (fromEnv) return fromEnv;
  const key = normalizeApi(api);
  const stored = loadLogin(io.env, key);
  if (!stored) throw new CliError(`not logged in to ${key}: run gatehouse auth login`, 3);
  if (Date.parse(stored.expiry) - Date.now() > refreshMarginMs) return stored.accessToken;
  // One process at a time refreshes; the others then find the fresh token it stored.
  return withCredentialsLock(io.env, async () => {
    const now = loadLogin(io.env, key);
    if (!now) throw new CliError(`not logged in to ${key}: run gatehouse auth login`, 3);
    if (Date.parse(now.expiry) - Date.now() > refreshMarginMs) return now.accessToken;
    const renewed = await renew(key, now, io);
    saveLogin(io.env, key, renewed);
    return renewed.accessToken;
  });
}

async function renew(api: string, stored: StoredLogin, io: CliIo): Promise<StoredLogin> {
  if (stored.kind === "workload" && stored.identityTokenFile && stored.stsEndpoint) {
    return workloadExchange(
      api,
      { stsEndpoint: stored.stsEndpoint } as Discovery,
      stored.identity,
      stored.identityTokenFile,
    );
  }
  if (!stored.refreshToken || !stored.tokenEndpoint) {
    throw new CliError(`the token for ${api} has expired: run gatehouse auth login`, 3);
  }
  try {
    const tokens = await tokenRequest(stored.tokenEndpoint, {
      grant_type: "refresh_token",
      refresh_token: stored.refreshToken,
      client_id: "gatehouse-cli",
    });
    return {
      ...stored,
      accessToken: tokens.accessToken,
      expiry: tokens.expiry.toISOString(),
      refreshToken: tokens.refreshToken,
    };
  } catch (err) {
    if (err instanceof TokenEndpointError && err.error === "invalid_grant") {
      // The session is over (logged out elsewhere, revoked, expired): nothing stored is useful.
      forgetLogin(io.env, api);
      throw new CliError(
        `the session for ${api} has ended (${err.description}): run gatehouse auth login`,
        3,
      );
    }
    throw err;
  }
}

/** The seed's workload flow: the OIDC token in `file` exchanged for a Gatehouse token. */
async function workloadExchange(
  api: string,
  discovery: Pick<Discovery, "stsEndpoint">,
  identity: string,
  file: string,
): Promise<StoredLogin> {
  let oidcToken: string;
  try {
    oidcToken = readFileSync(file, "utf8").trim();
  } catch (err) {
    throw new CliError(`--identity-token: cannot read ${file}: ${(err as Error).message}`);
  }
  if (oidcToken === "") throw new CliError(`--identity-token: ${file} is empty`);
  const url = new URL(discovery.stsEndpoint);
  url.searchParams.set("aud", api);
  url.searchParams.set("identity", identity);
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${oidcToken}` } });
  } catch (err) {
    throw new CliError(`cannot reach ${url.origin}: ${(err as Error).message}`, 1);
  }
  const body = (await res.json().catch(() => ({}))) as {
    token?: string;
    expiry?: string;
    message?: string;
  };
  if (!res.ok || !body.token || !body.expiry) {
    throw new CliError(`the exchange was refused: ${body.message ?? `HTTP ${res.status}`}`, 1);
  }
  return {
    kind: "workload",
    identity,
    accessToken: body.token,
    expiry: new Date(body.expiry).toISOString(),
    identityTokenFile: file,
    stsEndpoint: discovery.stsEndpoint,
  };
}

async function getCaller(api: string, token: string) {
  // Loaded here, not at the top: `auth token` and `auth logout` make no Connect call, and the
  // client, its transport and the service's messages are most of what a CLI process loads.
  const [{ Code, ConnectError, createClient }, { createConnectTransport }, { CallerService }] =
    await Promise.all([
      import("@connectrpc/connect"),
      import("@connectrpc/connect-node"),
      import("../../../gen/gatehouse/iam/v2beta1/caller_pb.js"),
    ]);
  const client = createClient(
    CallerService,
    createConnectTransport({ baseUrl: api, httpVersion: "1.1" }),
  );
  try {
    return await client.getCaller({}, { headers: { authorization: `Bearer ${token}` } });
  } catch (err) {
    if (err instanceof ConnectError) {
      if (err.code === Code.Unauthenticated) throw notLoggedInAnyMore(api, err);
      throw new CliError(`${api} refused the call: ${err.rawMessage}`, 1);
    }
    throw new CliError(`cannot reach ${api}: ${(err as Error).message}`, 1);
  }
}

/**
 * The server refused the token as unauthenticated (the session was revoked or has expired, the
 * identity is gone): as good as not logged in, exit code 3.
 */
export function notLoggedInAnyMore(api: string, err: ConnectError): CliError {
  return new CliError(`${api} refused the token: ${err.rawMessage}; run gatehouse auth login`, 3);
}

function describeIdentity(
  identity: { uid: string; name: string; email: string } | undefined,
): string {
  if (!identity) return "an unknown identity";
  const email = identity.email === "" ? "" : ` <${identity.email}>`;
  return `${identity.name}${email} (${identity.uid})`;
}

/** The API URL as the key of the stored login and the audience: no trailing slash. */
export function normalizeApi(api: string): string {
  let u: URL;
  try {
    u = new URL(api);
  } catch {
    throw new CliError(`--api: not a URL: ${JSON.stringify(api)}`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new CliError("--api: must be an http or https URL");
  }
  return u.href.replace(/\/$/, "");
}
