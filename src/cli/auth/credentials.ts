import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** What `gatehouse auth login` stored for one server. */
export interface StoredLogin {
  kind: "person" | "workload";
  /** The identity uid the tokens are for. */
  identity: string;
  accessToken: string;
  /** When the access token stops working (ISO 8601). */
  expiry: string;
  /** A person's refresh token (rotated on every use). */
  refreshToken?: string;
  /** The token endpoint and revocation endpoint the refresh token belongs to. */
  tokenEndpoint?: string;
  revocationEndpoint?: string;
  /** A workload's OIDC token file, read again for every exchange. */
  identityTokenFile?: string;
  stsEndpoint?: string;
}

interface CredentialsFile {
  version: 1;
  servers: Record<string, StoredLogin>;
}

/**
 * The file the CLI keeps its tokens in: `$XDG_CONFIG_HOME/gatehouse/credentials.json` (default
 * `~/.config`), readable by its owner only, one entry per server (its API URL). Written whole to
 * a temporary file and renamed, so a crash never leaves half a file.
 */
export function credentialsPath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config");
  return join(base, "gatehouse", "credentials.json");
}

function read(path: string): CredentialsFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, servers: {} };
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as CredentialsFile;
    if (parsed.version === 1 && typeof parsed.servers === "object") return parsed;
  } catch {
    // fall through
  }
  throw new Error(`${path} is not a Gatehouse credentials file; remove it and log in again`);
}

function write(path: string, file: CredentialsFile): void {
  const dir = join(path, "..");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** The stored login for `api`, if any. */
export function loadLogin(env: NodeJS.ProcessEnv, api: string): StoredLogin | undefined {
  return read(credentialsPath(env)).servers[api];
}

/** Store (or replace) the login for `api`. */
export function saveLogin(env: NodeJS.ProcessEnv, api: string, login: StoredLogin): void {
  const path = credentialsPath(env);
  const file = read(path);
  file.servers[api] = login;
  write(path, file);
}

/** Forget the login for `api`; the file goes when it holds no other server. */
export function forgetLogin(env: NodeJS.ProcessEnv, api: string): void {
  const path = credentialsPath(env);
  const file = read(path);
  delete file.servers[api];
  if (Object.keys(file.servers).length === 0) rmSync(path, { force: true });
  else write(path, file);
}

/** A lock older than this was left by a process that died holding it. */
const staleLockMs = 30_000;

/**
 * Run `fn` holding the credentials file's lock (`credentials.json.lock`, made with O_EXCL), so
 * that one process at a time refreshes: a refresh token is rotated on every use, and a second
 * process sending the one the first has just spent looks like a stolen token to the server,
 * which then ends the whole session (issue 23). A lock older than 30 s is taken over.
 */
export async function withCredentialsLock<T>(
  env: NodeJS.ProcessEnv,
  fn: () => Promise<T>,
): Promise<T> {
  const lock = `${credentialsPath(env)}.lock`;
  mkdirSync(join(lock, ".."), { recursive: true, mode: 0o700 });
  for (;;) {
    try {
      closeSync(openSync(lock, "wx", 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    try {
      if (Date.now() - statSync(lock).mtimeMs > staleLockMs) rmSync(lock, { force: true });
    } catch {
      // gone meanwhile: try again
    }
    await sleep(20 + Math.random() * 30);
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}
