import { CliError, type CliIo } from "../cli-io.js";

/** Options every `gatehouse auth` command takes: the API it talks to. */
export interface AuthOptions {
  /** The server's base URL (`--api`, env GATEHOUSE_API). */
  api: string;
}

/** `gatehouse auth login` options. */
export interface LoginOptions extends AuthOptions {
  /** An organization's IdentityProvider uid; absent: the server's login provider. */
  identityProvider?: string;
  /** false with --no-browser: print the URL instead of opening it. */
  browser: boolean;
  /** With identityToken: the workload flow (STS exchange) for this identity uid. */
  identity?: string;
  /** A file holding an OIDC token for the workload flow. */
  identityToken?: string;
}

/** Exit code for "not logged in". */
export const notLoggedIn = 3;

/** `gatehouse auth login`: sign in and store the tokens. */
export async function authLogin(_opts: LoginOptions, _io: CliIo): Promise<number> {
  throw new CliError("auth login is not built yet", 2);
}

/** `gatehouse auth token`: print a valid API token, refreshing it when needed. */
export async function authToken(_opts: AuthOptions, _io: CliIo): Promise<number> {
  throw new CliError("auth token is not built yet", 2);
}

/** `gatehouse auth status`: who is logged in. */
export async function authStatus(_opts: AuthOptions, _io: CliIo): Promise<number> {
  throw new CliError("auth status is not built yet", 2);
}

/** `gatehouse auth logout`: revoke the refresh token and forget the stored tokens. */
export async function authLogout(_opts: AuthOptions, _io: CliIo): Promise<number> {
  throw new CliError("auth logout is not built yet", 2);
}

/**
 * A valid API token for `api`: GATEHOUSE_TOKEN from the environment when set, else the stored
 * one, refreshed when it has expired. Throws a CliError with exit code 3 when not logged in.
 */
export async function apiToken(_api: string, io: CliIo): Promise<string> {
  const fromEnv = io.env.GATEHOUSE_TOKEN;
  if (fromEnv) return fromEnv;
  throw new CliError("not logged in: run gatehouse auth login", 3);
}
