import { Command, CommanderError } from "commander";
import { durationForms } from "../../duration.js";
import { CliError, type CliIo } from "../cli-io.js";
import type { AuthOptions } from "./auth-commands.js";

// Each subcommand's module is loaded when it runs: `auth status` need not load the pull tokens'
// jose and role-binding messages, nor `auth token` the Connect client: `auth token` took
// 0.64 s of CPU when every command's modules were loaded at start, 0.1 s since (the CLI
// suites start tens of these processes).
const commands = () => import("./auth-commands.js");
const pullTokens = () => import("./pull-tokens.js");

const about = `Sign in to a Gatehouse server and keep the tokens in
$XDG_CONFIG_HOME/gatehouse/credentials.json (default ~/.config; readable by you only).
Exit codes: 0 success, 1 the server refused or cannot be reached, 2 bad usage, 3 not logged in.`;

const apiHelp = "the Gatehouse server (env GATEHOUSE_API; default http://localhost:8080)";

/** `gatehouse auth ...`, parsed by commander; resolves to the exit code. */
export async function authCommand(argv: string[], io: CliIo): Promise<number> {
  let exit = 0;
  const api = (opts: { api?: string }) =>
    opts.api ?? io.env.GATEHOUSE_API ?? "http://localhost:8080";
  const program = new Command("gatehouse auth")
    .description(about)
    .exitOverride()
    .configureOutput({ writeOut: (t) => io.out(t), writeErr: (t) => io.err(t) });
  program
    .command("login")
    .description(
      "sign in through the browser (the server's login provider, or an organization's " +
        "identity provider), on any device with --headless, or log a workload in with " +
        "--identity and --identity-token",
    )
    .option("--api <url>", apiHelp)
    .option(
      "--identity-provider <provider>",
      "an organization's identity provider to sign in with: its name, your email domain " +
        "(example.com, DNS-verified by its organization) or its uid",
    )
    .option("--no-browser", "print the sign-in URL instead of opening a browser")
    .option(
      "--headless",
      "sign in from a machine without a browser: print a URL and a code to approve on any device",
    )
    .option("--identity <uid>", "log this workload identity in (with --identity-token)")
    .option(
      "--identity-token <file>",
      "a file holding the workload's OIDC token (read again on every renewal)",
    )
    .action(async (o) => {
      exit = await (await commands()).authLogin(
        {
          api: api(o),
          browser: o.browser !== false,
          ...(o.headless === true ? { headless: true } : {}),
          ...(o.identityProvider === undefined ? {} : { identityProvider: o.identityProvider }),
          ...(o.identity === undefined ? {} : { identity: o.identity }),
          ...(o.identityToken === undefined ? {} : { identityToken: o.identityToken }),
        },
        io,
      );
    });
  program
    .command("token")
    .description(
      "print a valid API token, refreshing it when needed; with --capabilities or --group, " +
        "a token narrowed to them (for a script or a CI job that needs less than you hold)",
    )
    .option("--api <url>", apiHelp)
    .option(
      "--capabilities <list>",
      "only these capabilities, comma-separated (groups.get,groups.list); repeatable",
      (v: string, prev: string[] = []) => [
        ...prev,
        ...v
          .split(",")
          .map((c) => c.trim())
          .filter((c) => c !== ""),
      ],
    )
    .option("--group <uid>", "only within this group's subtree")
    .action(async (o) => {
      exit = await (await commands()).authToken(
        {
          api: api(o),
          ...(o.capabilities === undefined ? {} : { capabilities: o.capabilities }),
          ...(o.group === undefined ? {} : { group: o.group }),
        },
        io,
      );
    });
  type Simple = (opts: AuthOptions, io: CliIo) => Promise<number>;
  const simple: [string, string, () => Promise<Simple>][] = [
    [
      "status",
      "who is logged in, and where they hold roles",
      async () => (await commands()).authStatus,
    ],
    [
      "logout",
      "revoke the session on the server and forget the stored tokens",
      async () => (await commands()).authLogout,
    ],
  ];
  for (const [name, description, run] of simple) {
    program
      .command(name)
      .description(description)
      .option("--api <url>", apiHelp)
      .action(async (o) => {
        exit = await (await run())({ api: api(o) }, io);
      });
  }
  program
    .command("configure-docker")
    .description(
      "make docker (and skopeo, crane, containerd) get a registry's credentials from " +
        "docker-credential-gatehouse: fresh tokens of this login",
    )
    .requiredOption(
      "--registry <host>",
      "the registry's host (registry.example.com, 127.0.0.1:5000)",
    )
    .option("--api <url>", apiHelp)
    .action(async (o) => {
      const { configureDocker } = await import("./docker-credentials.js");
      exit = configureDocker({ registry: o.registry, api: api(o) }, io);
    });
  const pullToken = program
    .command("pull-token")
    .description("registry pull tokens: identities that may pull, until they expire");
  pullToken
    .command("create")
    .description(
      "make a pull token (an identity bound to registry.pull until it expires) and print " +
        "the docker login line that uses it",
    )
    .requiredOption("--parent <group>", "the group whose images it may pull: a uid or a path")
    .requiredOption("--registry <host>", "the registry's host, for the docker login line")
    .option("--for <duration>", `how long it lasts (${durationForms}; at most 365d)`, "30d")
    .option("--name <name>", "the identity's name (default: pull token <expiry date>)")
    .option("--api <url>", apiHelp)
    .action(async (o) => {
      exit = await (await pullTokens()).createPullToken(
        {
          api: api(o),
          parent: o.parent,
          registry: o.registry,
          for: o.for,
          ...(o.name === undefined ? {} : { name: o.name }),
        },
        io,
      );
    });
  pullToken
    .command("list")
    .description("the pull tokens at and below a group, with their expiry")
    .requiredOption("--parent <group>", "a group uid or path")
    .option("--api <url>", apiHelp)
    .action(async (o) => {
      exit = await (await pullTokens()).listPullTokens({ api: api(o), parent: o.parent }, io);
    });
  pullToken
    .command("delete")
    .description("delete a pull token (its identity and binding): it stops working at once")
    .argument("<uid>")
    .option("--api <url>", apiHelp)
    .action(async (uid: string, o) => {
      exit = await (await pullTokens()).deletePullToken({ api: api(o), uid }, io);
    });
  try {
    await program.parseAsync(argv, { from: "user" });
    return exit;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof CliError) throw err;
    throw err;
  }
}
