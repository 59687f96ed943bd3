import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SecurityTokenService } from "../../../gen/gatehouse/sts/v1/sts_pb.js";
import { CliError, type CliIo } from "../cli-io.js";
import { apiToken, normalizeApi, notLoggedInAnyMore } from "./auth-commands.js";
import { requireHelperOnPath } from "./helper-on-path.js";

/** The helper's name in docker's `credHelpers`: docker runs `docker-credential-gatehouse`. */
export const helperName = "gatehouse";

const hostPattern =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** Which Gatehouse API gives the tokens of each registry host. */
function registriesPath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config");
  return join(base, "gatehouse", "docker-registries.json");
}

function readJson(path: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as unknown;
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return {};
  }
  throw new CliError(`${path} is not a JSON object; fix or remove it`);
}

// Whole file to a temporary one, then renamed: a crash never leaves half a file.
function writeJson(path: string, value: unknown, mode: number): void {
  mkdirSync(join(path, ".."), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

/** The registry host a docker client names (a host, or a URL as older clients send). */
export function registryHost(server: string): string {
  const s = server.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) {
    try {
      return new URL(s).host;
    } catch {
      return s;
    }
  }
  return s.replace(/\/.*$/, "");
}

/**
 * A registry-audience token for `registry` (its host, the registry's service name) made from
 * the login's API token by `/sts/exchange`: the registry's token endpoint takes it, every API
 * call refuses it, and it lives 15 minutes. A registry passes whatever docker gives it to the
 * token realm it names, which may be its own: it must never be the API token (issue 35, N6).
 */
export async function registryCredential(api: string, registry: string, io: CliIo) {
  const token = await apiToken(api, io);
  const sts = createClient(
    SecurityTokenService,
    createConnectTransport({ baseUrl: api, httpVersion: "1.1" }),
  );
  try {
    const answer = await sts.exchange(
      { aud: registry },
      { headers: { authorization: `Bearer ${token}` } },
    );
    return answer.token;
  } catch (err) {
    if (!(err instanceof ConnectError)) {
      throw new CliError(`cannot reach ${api}: ${(err as Error).message}`, 1);
    }
    if (err.code === Code.Unauthenticated) throw notLoggedInAnyMore(api, err);
    throw new CliError(
      `${api} gave no token for the registry ${registry}: ${err.rawMessage} (its ` +
        "GATEHOUSE_REGISTRY_AUDIENCE must name this host)",
      1,
    );
  }
}

/**
 * `gatehouse auth configure-docker --registry <host>`: make docker (and tools reading its
 * config: skopeo, crane, containerd's CRI) ask `docker-credential-gatehouse` for that
 * registry's credentials, which hands out a fresh token of the `gatehouse auth login` for
 * `api`. Adds `credHelpers[<host>] = "gatehouse"` to `$DOCKER_CONFIG/config.json` (default
 * ~/.docker), keeping everything else in it. Refused, with the command that fixes it, when
 * docker could not find the helper on PATH (requireHelperOnPath).
 */
export function configureDocker(opts: { registry: string; api: string }, io: CliIo): number {
  const host = registryHost(opts.registry);
  if (!hostPattern.test(host)) {
    throw new CliError(
      `--registry: not a registry host (registry.example.com, 127.0.0.1:5000): ${JSON.stringify(opts.registry)}`,
    );
  }
  const api = normalizeApi(opts.api);
  requireHelperOnPath(io.env.PATH);
  const dockerDir = io.env.DOCKER_CONFIG || join(io.env.HOME || homedir(), ".docker");
  const dockerConfig = join(dockerDir, "config.json");
  const config = readJson(dockerConfig);
  const helpers = (config.credHelpers ?? {}) as Record<string, string>;
  config.credHelpers = { ...helpers, [host]: helperName };
  writeJson(dockerConfig, config, 0o600);
  const registries = readJson(registriesPath(io.env));
  registries[host] = { api };
  writeJson(registriesPath(io.env), registries, 0o600);
  io.out(
    `docker now asks docker-credential-gatehouse for ${host} (in ${dockerConfig}); it hands out ` +
      `15-minute registry tokens of your gatehouse auth login to ${api}, never your API token\n`,
  );
  return 0;
}

/**
 * `docker-credential-gatehouse get|store|erase|list`: docker's credential-helper protocol on
 * stdin and stdout. `get` reads a registry host and prints `{ServerURL, Username, Secret}`,
 * the secret a fresh registry-audience token (registryCredential: the registry's token
 * endpoint takes it as the password, the API refuses it). `store` and `erase` change nothing: the
 * credentials are Gatehouse's sign-in, managed by `gatehouse auth login` and `logout`.
 */
export async function credentialHelper(argv: string[], stdin: string, io: CliIo): Promise<number> {
  const [action] = argv;
  const registries = readJson(registriesPath(io.env));
  switch (action) {
    case "get": {
      const host = registryHost(stdin);
      const entry = registries[host] as { api?: unknown } | undefined;
      if (typeof entry?.api !== "string") {
        // The protocol's "not found", which docker treats as "no credentials".
        io.out("credentials not found in native keychain\n");
        return 1;
      }
      let token: string;
      try {
        token = await registryCredential(entry.api, host, io);
      } catch (err) {
        if (!(err instanceof CliError)) throw err;
        io.err(`docker-credential-gatehouse: ${err.message}\n`);
        return 1;
      }
      io.out(`${JSON.stringify({ ServerURL: host, Username: "gatehouse", Secret: token })}\n`);
      return 0;
    }
    case "store":
    case "erase":
      return 0;
    case "list":
      io.out(
        `${JSON.stringify(Object.fromEntries(Object.keys(registries).map((h) => [h, "gatehouse"])))}\n`,
      );
      return 0;
    default:
      io.err(
        "Usage: docker-credential-gatehouse get|store|erase|list (docker's credential-helper " +
          "protocol; set up with gatehouse auth configure-docker --registry <host>)\n",
      );
      return 2;
  }
}
