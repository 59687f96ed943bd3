import { readFileSync } from "node:fs";
import { ConfigError, settingsHelp } from "../config.js";
import { CliError, type CliIo, processIo, terminalSafeIo } from "./cli-io.js";
import { type OwnOptions, ownOptionsHelp } from "./command-args.js";
import { importUsage } from "./import-usage.js";

// The remote commands (built from the service table: every service's messages) are loaded only
// for a remote command, the overall help, or an unknown command's.
const remote = () => import("./remote/resource-commands.js");

const usage = (remoteUsage: string) => `Usage: gatehouse <command> [options]

Commands:
  auth login|token|status|logout|configure-docker|pull-token
                                sign in to a Gatehouse server (browser or workload token) and
                                print API tokens; pull-token create|list|delete: registry pull
                                tokens that expire; see gatehouse help auth
${remoteUsage}
                                manage a remote server's resources over the Connect protocol
                                (--api or GATEHOUSE_API; the token of gatehouse auth, or
                                GATEHOUSE_TOKEN); --output table|json; gatehouse iam groups
                                create --help lists a command's flags

Operator commands (work on the database: the SQLite file, or PostgreSQL):
  serve                         serve the API (gRPC, gRPC-Web, Connect and REST on one port)
  bootstrap --org <name>        create an organization and an owner identity in the database;
                                print {orgUid, identityUid, token, expiry} as JSON
  token --identity <uid>        print a fresh token for an existing identity as JSON
  keys rotate                   make a new token signing key sign: the pending next key of
                                registry trust-bundle if there is one, else a new key
  registry trust-bundle         print the PEM certificates of every key that may sign a
                                registry token (current and next) for the registry's
                                auth.token.rootcertbundle; see docs/registry.md
${importUsage}
  help [<command>]              show this text, or a command's options (also <command> --help)
  --version                     print the version

Every command reads the server's settings (each also from its environment variable), so it
works on the same database (GATEHOUSE_DB, --db; or GATEHOUSE_DATABASE_URL, --database-url for
PostgreSQL) and signs for the same auth and base URLs: bootstrap and token mint for the base
URL given now (GATEHOUSE_BASE_URL, or GATEHOUSE_PORT for http://localhost:<port>), else for the
one the last server on the database served under, which they name on stderr.
Exit codes: 0 success, 1 the request failed, 2 bad usage, configuration or database,
3 not logged in.
`;

// An operator command's module (the server, the store) is loaded only when that command runs or
// shows its help: `gatehouse auth status` or `gatehouse iam groups list` loaded the whole server
// before (0.75-0.9 s of CPU a start, most of a CLI call's time).
const noOptions = async (): Promise<OwnOptions> => ({});
const commandHelp: Record<string, { synopsis: string; own: () => Promise<OwnOptions> }> = {
  serve: { synopsis: "gatehouse serve [options]", own: noOptions },
  bootstrap: {
    synopsis:
      "gatehouse bootstrap --org <name> [options]\n\n" +
      "Create an organization, an identity in it bound to the built-in owner role, and a token\n" +
      "for it. The identity matches no OIDC token (its claimMatch issuer is urn:gatehouse:bootstrap);\n" +
      "more tokens for it come from gatehouse token. Creates the database file if it is missing.",
    own: async () => (await import("./bootstrap.js")).bootstrapOptions,
  },
  token: {
    synopsis:
      "gatehouse token --identity <uid> [--aud <audience>] [options]\n\n" +
      "Print a fresh one-hour token for an existing identity. The database must exist.",
    own: async () => (await import("./token.js")).tokenOptions,
  },
  import: {
    synopsis: `gatehouse import advisories|tags <target> <file> [--db path | --database-url url]\n\n${importUsage}\n\nRead OSV advisories or {name, digest} tags (one JSON document, an array, or JSON lines;\ngzip is read directly) and upsert them in batches; a bad record is reported and skipped.\nExit codes: 0 all imported, 1 some records rejected, 2 bad usage, database, target or file.`,
    own: noOptions,
  },
  keys: {
    synopsis:
      "gatehouse keys rotate [options]\n\n" +
      "Make a new key sign: the pending next key that gatehouse registry trust-bundle created\n" +
      "(so registries that trust it keep verifying), else a new one. Older keys keep verifying\n" +
      "until their tokens have expired. The database must exist.",
    own: noOptions,
  },
  "trust-bundle": {
    synopsis:
      "gatehouse registry trust-bundle [options]\n\n" +
      "Print a PEM bundle of self-signed certificates, one for every key that may sign a\n" +
      "registry token: the current key, older keys still verifying, and the pending next key\n" +
      "(created if there is none), which the next gatehouse keys rotate makes sign. Give it to\n" +
      "the registry as auth.token.rootcertbundle. The database must exist.",
    own: noOptions,
  },
};

const commands: Record<string, (argv: string[], io: CliIo) => Promise<number>> = {
  serve: async (argv) => (await import("./serve.js")).serve(argv),
  bootstrap: async (argv, io) => (await import("./bootstrap.js")).bootstrap(argv, io),
  token: async (argv, io) => (await import("./token.js")).token(argv, io),
  keys: async (argv, io) => (await import("./keys.js")).keys(argv, io),
  "trust-bundle": async (argv, io) =>
    (await import("./trust-bundle.js")).trustBundleCommand(argv, io),
  import: async (argv, io) =>
    (await import("./import.js")).importCommand(
      argv,
      io === processIo
        ? undefined
        : { stdout: { write: io.out }, stderr: { write: io.err }, env: io.env },
    ),
};

/** Run the gatehouse command line; resolves to the process exit code. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  const [first, ...after] = argv;
  if (first === "--version" || first === "-V" || first === "version") {
    io.out(`gatehouse ${version()}\n`);
    return 0;
  }
  // `help <command>` is `<command> --help`.
  const [command, ...rest] =
    first === "help" && after.length > 0 ? [...after, "--help"] : [first, ...after];
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    io.out(usage((await remote()).remoteUsage()));
    return 0;
  }
  // `registry trust-bundle` is an operator command on the database, beside the remote ones.
  if (command === "registry" && rest[0] === "trust-bundle") {
    return main(["trust-bundle", ...rest.slice(1)], io);
  }
  // The remote commands and auth parse their own arguments, help included (commander).
  // What these print comes from a server: never raw to the terminal.
  if (command === "auth") {
    const safe = terminalSafeIo(io);
    const { authCommand } = await import("./auth/auth-cli.js");
    return guarded(command, () => authCommand(rest, safe), safe);
  }
  const run = commands[command];
  const help = commandHelp[command];
  if (!run || !help) {
    const { remoteCommand, remoteGroups, remoteUsage } = await remote();
    if (Object.hasOwn(remoteGroups, command)) {
      const safe = terminalSafeIo(io);
      return guarded(command, () => remoteCommand(command, rest, safe), safe);
    }
    io.err(`gatehouse: unknown command ${JSON.stringify(command)}\n\n${usage(remoteUsage())}`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    const own = ownOptionsHelp(await help.own());
    io.out(
      `Usage: ${help.synopsis}\n\n${own === "" ? "" : `Options:\n${own}\n\n`}Settings (flag, environment variable):\n${settingsHelp()}\n`,
    );
    return 0;
  }
  return guarded(command, () => run(rest, io), io);
}

/** Run a command; its refusals become their message on stderr and their exit code. */
async function guarded(command: string, run: () => Promise<number>, io: CliIo): Promise<number> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof CliError) {
      io.err(`gatehouse ${command}: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof ConfigError) {
      io.err(`gatehouse: configuration error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

/** The package's version, from package.json beside src/ (or dist/src/ once built). */
function version(): string {
  for (const rel of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "gatehouse" && pkg.version) return pkg.version;
    } catch {
      // not at this depth
    }
  }
  return "unknown";
}
