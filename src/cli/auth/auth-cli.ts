import { parseArgs } from "node:util";
import { CliError, type CliIo } from "../cli-io.js";
import { authLogin, authLogout, authStatus, authToken } from "./auth-commands.js";

/** The `--help` text of `gatehouse auth`. */
export const authUsage = `gatehouse auth <command> [--api <url>]

Sign in to a Gatehouse server and keep the tokens in $XDG_CONFIG_HOME/gatehouse/credentials.json
(default ~/.config; readable by you only). --api (env GATEHOUSE_API, default
http://localhost:8080) names the server.

Commands:
  login [--identity-provider <uid>] [--no-browser]
                      sign in through the browser: the server's login provider, or an
                      organization's identity provider; prints who is logged in
  login --identity <uid> --identity-token <file>
                      log a workload in: exchange the OIDC token in <file> (read again on
                      every renewal) for a token of that identity
  token               print a valid API token, refreshing it when needed
  status              who is logged in, and where they hold roles
  logout              revoke the session and forget the stored tokens

Exit codes: 0 success, 1 the server refused or cannot be reached, 2 bad usage, 3 not logged in.`;

/** `gatehouse auth ...`. */
export async function authCommand(argv: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: {
        api: { type: "string" },
        "identity-provider": { type: "string" },
        "no-browser": { type: "boolean" },
        identity: { type: "string" },
        "identity-token": { type: "string" },
      },
    }).values;
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  const api = (values.api as string | undefined) ?? io.env.GATEHOUSE_API ?? "http://localhost:8080";
  const loginOnly = ["identity-provider", "no-browser", "identity", "identity-token"];
  if (sub !== "login") {
    const stray = loginOnly.find((f) => values[f] !== undefined);
    if (stray) throw new CliError(`--${stray} is an option of auth login only`);
  }
  switch (sub) {
    case "login":
      return authLogin(
        {
          api,
          browser: values["no-browser"] !== true,
          ...(values["identity-provider"] === undefined
            ? {}
            : { identityProvider: values["identity-provider"] as string }),
          ...(values.identity === undefined ? {} : { identity: values.identity as string }),
          ...(values["identity-token"] === undefined
            ? {}
            : { identityToken: values["identity-token"] as string }),
        },
        io,
      );
    case "token":
      return authToken({ api }, io);
    case "status":
      return authStatus({ api }, io);
    case "logout":
      return authLogout({ api }, io);
    default:
      throw new CliError(
        sub === undefined
          ? "a command is required: login, token, status or logout"
          : `unknown command ${JSON.stringify(sub)}: login, token, status or logout`,
      );
  }
}
