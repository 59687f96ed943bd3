import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  type JsonValue,
  type Message,
  toJson,
} from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Command, CommanderError, Option } from "commander";
import {
  AccessShortfall_Lack,
  type CheckAccessResponse,
  type ListCallerCapabilitiesResponse,
} from "../../../gen/gatehouse/iam/v2beta1/access_pb.js";
import {
  type ListPeopleResponse,
  type ListPersonSessionsResponse,
  type Person,
  Person_Origin,
  type RevokePersonSessionsResponse,
} from "../../../gen/gatehouse/iam/v2beta1/people_pb.js";
import type {
  BatchCreateRoleBindingsResponse,
  RoleBinding,
} from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import type { ScimConnection, ScimToken } from "../../../gen/gatehouse/iam/v2beta1/scim_pb.js";
import type { ListTeamMembersResponse, Team } from "../../../gen/gatehouse/iam/v2beta1/teams_pb.js";
import {
  builtinRoles,
  canonicalCapability,
  capabilityDescription,
} from "../../auth/capabilities.js";
import { durationForms, parseDurationSeconds } from "../../duration.js";
import {
  cliPlaces,
  type ServiceName,
  type ServiceTable,
  serviceEntries,
} from "../../service-table.js";
import { isUid } from "../../uid.js";
import { apiToken, normalizeApi } from "../auth/auth-commands.js";
import { CliError, type CliIo } from "../cli-io.js";
import {
  type OutputFormat,
  printApiError,
  printJson,
  printJsonLine,
  printTable,
} from "./api-output.js";
import { type FieldFlag, messageFlags, messageFromFlags } from "./message-flags.js";
import { groupByPath, type NameKind, namedFlags, nameHelp, resolveNames } from "./names.js";

/** A resource the command line manages: its command name and its service. */
interface Resource {
  command: string;
  service: DescService;
  /** The resource message's name, as in `Create<noun>`. */
  noun: string;
  /** Its plural, as in `List<plural>`. */
  plural: string;
}

/**
 * An RPC of a group that is no resource verb: its command, taking a flag per request field,
 * and how the table format shows its answer.
 */
interface Action {
  command: string;
  about: string;
  method: DescMethod;
  text: (res: Message) => string;
  /** The exit code an answer means (default 0): check-access exits 1 on a denial. */
  exitOf?: (res: Message) => number;
  /** JSON shows every field, defaults too (check-access's `"allowed": false`). */
  jsonDefaults?: true;
  /** More lines for the table format, read with further calls (the roles that would grant). */
  more?: (
    res: Message,
    call: Call,
    values: ReadonlyMap<string, string | string[]>,
  ) => Promise<string>;
}

/** The table's command line places of an entry, one at a time. */
type CliOf<N extends ServiceName> = ServiceTable[N]["cli"] extends readonly (infer P)[]
  ? P
  : ServiceTable[N]["cli"];
/** A command group of the service table (`iam`, `registry`, ...). */
type CliGroup = {
  [N in ServiceName]: CliOf<N> extends { group: infer G } ? G : never;
}[ServiceName];
/** The action commands of one place, or of each of a union of places. */
type ActionsOf<P> = P extends { actions: infer A } ? keyof A : never;
/** A command of the table that runs one RPC (`check-access`). */
type ActionCommand = { [N in ServiceName]: ActionsOf<CliOf<N>> }[ServiceName];

// What the table cannot say: each group's summary, and each action's help and table output.
// A group or action added to the table without its line here fails to compile.
const groupAbout: Record<CliGroup, string> = {
  iam: "groups, identities, roles, role bindings, teams, identity providers, accounts, invites, access, people",
  registry: "container repositories and their tags",
  advisories: "vulnerability advisories",
  events: "the audit trail: one CloudEvent for every change, and webhook subscriptions (owners)",
  scim: "an organization's SCIM connection: the token its directory provisions people with",
};
/** What a group's usage line adds in parentheses. */
const usageNote: Partial<Record<CliGroup, string>> = {
  events: "the audit trail: --type, --actor, --since, ...; export: JSON Lines",
};
const actionShown: Record<ActionCommand, Omit<Action, "command" | "method">> = {
  "token create": {
    about: "connect the organization's directory: its SCIM base URL and a token, shown once",
    text: (res) => scimTokenText(res as ScimToken),
  },
  "token rotate": {
    about: "replace the organization's SCIM token: the old one stops working now",
    text: (res) => scimTokenText(res as ScimToken),
  },
  "token revoke": {
    about: "revoke the organization's SCIM token: its directory can no longer provision",
    text: () => "revoked\n",
  },
  connection: {
    about: "the organization's SCIM connection: base URL, creator, last use",
    text: (res) => {
      const c = res as ScimConnection;
      return `${c.baseUrl}\tcreated by ${c.creatorUid}\n`;
    },
  },
  "check-access": {
    about: "whether an identity holds a capability at a group, and why (exit 1 if not)",
    text: (res) => accessText(res as CheckAccessResponse),
    exitOf: (res) => ((res as CheckAccessResponse).allowed ? 0 : 1),
    jsonDefaults: true,
    more: (res, _call, values) =>
      Promise.resolve(grantingLine(res as CheckAccessResponse, values.get("capability") as string)),
  },
  "bind-batch": {
    about:
      'grant several roles at one group, all or none: --parent <group> --requests \'{"roleBinding": {"identityUid": "…", "roleUid": "…"}}\' (repeatable, at most 100)',
    text: (res) =>
      (res as BatchCreateRoleBindingsResponse).roleBindings
        .map((b) => `${b.uid}\t${b.identity?.name ?? ""}\t${b.role?.name ?? ""}\n`)
        .join(""),
  },
  people: {
    about:
      "the people of a group (owners): name, email, how they came, last sign-in, roles (own or via a team), teams; --query searches name and email",
    text: (res) => {
      const page = res as ListPeopleResponse;
      const more = page.nextPageToken ? `next page: --page-token ${page.nextPageToken}\n` : "";
      return page.people.map(personLine).join("") + more;
    },
  },
  person: {
    about: "one person of a group (owners), as `people` shows them",
    text: (res) => personLine(res as Person),
  },
  "person-sessions": {
    about: "a person's active sign-in sessions (owners)",
    text: (res) =>
      (res as ListPersonSessionsResponse).sessions
        .map((s) => `${s.id}\t${s.clientId}\t${isoOf(s.createTime)}\t${isoOf(s.expireTime)}\n`)
        .join(""),
  },
  "end-sessions": {
    about: "end one session of a person (--session-id) or all of them, at once (owners)",
    text: (res) => `ended ${(res as RevokePersonSessionsResponse).revokedCount} session(s)\n`,
  },
  "team-add-members": {
    about: "add identities to a team: --uid <team> --identity-uids <uid> (repeatable, at most 100)",
    text: (res) => teamLine(res as Team),
  },
  "team-remove-members": {
    about:
      "remove identities from a team, ending what it gave them: --uid <team> --identity-uids <uid>",
    text: (res) => teamLine(res as Team),
  },
  "team-members": {
    about: "the members of a team: --uid <team> [--page-size n] [--page-token t]",
    text: (res) => {
      const page = res as ListTeamMembersResponse;
      return [
        ...page.members.map((m) => `${m.identity?.uid ?? ""}\t${m.identity?.name ?? ""}\n`),
        ...(page.nextPageToken ? [`next page: --page-token ${page.nextPageToken}\n`] : []),
      ].join("");
    },
  },
  capabilities: {
    about: "the capabilities you hold at a group, each with what it lets you do",
    text: (res) => {
      const held = (res as ListCallerCapabilitiesResponse).capabilities;
      const width = Math.max(0, ...held.map((c) => c.length));
      return held
        .map((c) => {
          const known = canonicalCapability(c);
          return `${c.padEnd(width)}  ${known ? capabilityDescription(known) : ""}`.trimEnd();
        })
        .map((l) => `${l}\n`)
        .join("");
    },
  },
};

/** A new SCIM token, as an owner copies it into the directory: URL and token, once. */
function scimTokenText(t: ScimToken): string {
  return `base URL: ${t.connection?.baseUrl ?? ""}\ntoken:    ${t.token}\n(the token is not shown again; gatehouse scim token rotate makes a new one)\n`;
}

/** A team as a membership change's table output shows it: uid, name, member count. */
function teamLine(t: Team): string {
  return `${t.uid}\t${t.name}\t${t.memberCount} members\n`;
}

/** A CRUD resource's noun and plural, read from its methods (`GetGroup`, `ListGroups`). */
function resourceOf(command: string, service: DescService, only?: string): Resource {
  const list = service.methods.find((m) => m.name.startsWith(`List${only ?? ""}`));
  const items = list?.output.fields.find((f) => f.fieldKind === "list" && f.listKind === "message");
  const get = service.methods.find((m) => m.name.startsWith(`Get${only ?? ""}`));
  const noun =
    only ??
    get?.name.slice("Get".length) ??
    (items?.fieldKind === "list" ? items.message?.name : "");
  if (!list || !noun) throw new Error(`${service.typeName}: no List of a resource`);
  return { command, service, noun, plural: list.name.slice("List".length) };
}

/** The remote command groups, the resources of each and its other commands, from the table. */
export const remoteGroups: Record<
  string,
  { about: string; resources: Resource[]; actions: Action[] }
> = {};
for (const entry of serviceEntries) {
  const { service } = entry;
  for (const place of cliPlaces(entry)) {
    const group = place.group as CliGroup;
    remoteGroups[group] ??= { about: groupAbout[group], resources: [], actions: [] };
    const spec = remoteGroups[group];
    if ("command" in place) {
      spec.resources.push(resourceOf(place.command, service, place.noun));
      continue;
    }
    for (const [command, name] of Object.entries(place.actions)) {
      const method = service.methods.find((m) => m.name === name);
      if (!method) throw new Error(`${service.typeName} has no ${name} for ${command}`);
      spec.actions.push({ command, method, ...actionShown[command as ActionCommand] });
    }
  }
}

/**
 * The remote commands' lines of `gatehouse help`: each group's resources and the verbs they
 * have, and each action with its required flags.
 */
export function remoteUsage(): string {
  const lines: string[] = [];
  const verbs = ["list", "get", "create", "update", "delete"];
  for (const [group, spec] of Object.entries(remoteGroups)) {
    // The group's own verbs (`events list`) and its named resources (`events subscriptions
    // ...`) each get a line: one line for both would offer the named ones' verbs on the group.
    const own = spec.resources.filter((r) => r.command === "");
    const named = spec.resources.filter((r) => r.command !== "");
    const groupNote = usageNote[group as CliGroup];
    for (const [set, extra] of [
      [own, groupNote],
      [named, own.length > 0 ? undefined : groupNote],
    ] as const) {
      if (set.length === 0) continue;
      const has = (r: Resource, verb: string) =>
        r.service.methods.some(
          (m) =>
            m.name ===
            `${verb[0]?.toUpperCase()}${verb.slice(1)}${verb === "list" ? r.plural : r.noun}`,
        );
      const common = verbs.filter((v) => set.some((r) => has(r, v)));
      const commands = set.map((r) => r.command).filter((c) => c !== "");
      const head = `  ${[group, commands.join("|")].filter((w) => w !== "").join(" ")}`;
      const tail = `${common.join("|")} [flags]`;
      const notes = set.flatMap((r) => {
        const missing = common.filter((v) => !has(r, v));
        const more = [
          ...(r.service.methods.some((m) => m.name === `Redeem${r.noun}`) ? ["redeem <code>"] : []),
          ...answerVerbs
            .filter((a) => r.service.methods.some((m) => m.name === `${a.method}${r.noun}`))
            .map((a) => `${a.verb} <uid>`),
        ];
        return [
          ...(missing.length > 0 && commands.length > 1
            ? [`${r.command}: no ${missing.join(", ")}`]
            : []),
          ...(more.length > 0 ? [`${r.command} also: ${more.join(", ")}`] : []),
        ];
      });
      const noted = [...notes, ...(extra ? [extra] : [])];
      const note = noted.length > 0 ? `   (${noted.join("; ")})` : "";
      if (head.length + tail.length + note.length + 1 <= 96) lines.push(`${head} ${tail}${note}`);
      else lines.push(head, `      ${tail}${note}`);
    }
    for (const a of spec.actions) {
      const required = messageFlags(a.method.input)
        .filter((f) => f.required)
        .map((f) => `--${f.flag} <${f.flag.endsWith("uid") ? "uid" : "value"}>`);
      lines.push(`  ${group} ${a.command} ${required.join(" ")}`.trimEnd());
      lines.push(`${" ".repeat(32)}${a.about}`);
    }
  }
  return lines.join("\n");
}

/** What every remote command needs at run time. */
interface RunContext {
  io: CliIo;
  /** Set by the action: the process exit code. */
  exit: number;
}

/** Run `gatehouse <group> ...` for a remote group; resolves to the exit code. */
export async function remoteCommand(group: string, argv: string[], io: CliIo): Promise<number> {
  const ctx: RunContext = { io, exit: 0 };
  const program = remoteProgram(group, ctx).name(`gatehouse ${group}`);
  try {
    await program.parseAsync(argv, { from: "user" });
    return ctx.exit;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
}

/** Build the commander program of one remote group (`iam`, `registry` or `advisories`). */
export function remoteProgram(group: string, ctx: RunContext): Command {
  const spec = remoteGroups[group];
  if (!spec) throw new Error(`no remote group ${group}`);
  const root = new Command(group)
    .description(spec.about)
    .exitOverride()
    .configureOutput({ writeOut: (t) => ctx.io.out(t), writeErr: (t) => ctx.io.err(t) });
  for (const r of spec.resources) {
    const parent = r.command === "" ? root : root.command(r.command).description(spaced(r.plural));
    addVerbs(parent, r, ctx);
  }
  for (const a of spec.actions) addAction(root, a, ctx);
  return root;
}

function addAction(root: Command, a: Action, ctx: RunContext): void {
  const flags = messageFlags(a.method.input);
  // "token create": a command of the subcommand `token`, made once for its actions.
  const words = a.command.split(" ");
  let parent = root;
  for (const word of words.slice(0, -1)) {
    parent = parent.commands.find((c) => c.name() === word) ?? parent.command(word);
  }
  const cmd = common(parent.command(words.at(-1)!).description(a.about));
  addFlags(cmd, flags);
  cmd.action(() =>
    run(ctx, cmd, async (call) => {
      const values = givenValues(cmd, flags);
      for (const f of flags) {
        if (f.required && !values.has(f.flag)) throw new CliError(`--${f.flag} is required`);
      }
      await resolveNames(call.list, values);
      const res = (await call.unary(
        a.method,
        messageFromFlags(a.method.input, flags, values),
      )) as Message;
      if (call.format === "json") {
        printJson(ctx.io, a.method.output, res as never, {
          alwaysEmitImplicit: a.jsonDefaults === true,
        });
      } else {
        ctx.io.out(a.text(res));
        if (a.more) ctx.io.out(await a.more(res, call, values));
      }
      call.exit = a.exitOf?.(res) ?? 0;
    }),
  );
}

const originWords: Record<Person_Origin, string> = {
  [Person_Origin.UNSPECIFIED]: "?",
  [Person_Origin.SIGN_IN]: "sign-in",
  [Person_Origin.IDENTITY_PROVIDER]: "identity-provider",
  [Person_Origin.INVITE]: "invite",
  [Person_Origin.SCIM]: "scim",
};

function isoOf(t: { seconds: bigint; nanos: number } | undefined): string {
  return t ? new Date(Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6)).toISOString() : "";
}

/**
 * A person as one line: uid, name, email, how they came, last sign-in, roles (`role@group`,
 * and ` via team <name>` for one held through a team), teams.
 */
function personLine(p: Person): string {
  const came = originWords[p.origin] + (p.identityProviderUid ? ` ${p.identityProviderUid}` : "");
  const roles = p.roleBindings.map(
    (b) =>
      `${b.role?.name ?? "?"}@${b.group?.name ?? "?"}${b.team ? ` via team ${b.team.name}` : ""}`,
  );
  const teams = p.teams.map((t) => t.name).join(",") || "-";
  return `${[p.uid, p.name, p.email || "-", came, isoOf(p.lastSignInTime), roles.join(","), teams].join("\t")}\n`;
}

/** A CheckAccess answer as sentences: the decision, then the bindings behind it. */
function accessText(res: CheckAccessResponse): string {
  const at = (b: RoleBinding | undefined) => `${b?.group?.name ?? "?"} (${b?.group?.uid ?? "?"})`;
  const lines = [res.allowed ? "allowed" : "denied"];
  for (const g of res.grants) {
    const b = g.roleBinding;
    lines.push(
      `  granted by role ${b?.role?.name} bound at ${at(b)}${g.inherited ? ", inherited" : ", directly"} [binding ${b?.uid}]`,
    );
  }
  for (const s of res.shortfalls) {
    const b = s.roleBinding;
    const why =
      s.lack === AccessShortfall_Lack.CAPABILITY
        ? "applies here, but the role lacks the capability"
        : "the role holds the capability, but at a group that does not cover this one";
    lines.push(`  role ${b?.role?.name} bound at ${at(b)}: ${why} [binding ${b?.uid}]`);
  }
  if (!res.allowed && res.shortfalls.length === 0) {
    lines.push("  the identity holds no role in this organization");
  }
  return `${lines.join("\n")}\n`;
}

/**
 * The line of a denial naming the roles that would grant its capability, as CheckAccess
 * answers them: built-in roles by name, the organization's own with their uid.
 */
function grantingLine(res: CheckAccessResponse, asked: string): string {
  if (res.allowed || res.grantingRoles.length === 0) return "";
  const capability = canonicalCapability(asked) ?? asked;
  const names = res.grantingRoles.map((r) =>
    builtinRoles.some((b) => b.uid === r.uid) ? r.name : `${r.name} (${r.uid})`,
  );
  return `  roles that would grant ${capability}: ${names.join(", ")}\n`;
}

function methodOf(service: DescService, name: string): DescMethod | undefined {
  return service.methods.find((m) => m.name === name);
}

function resourceField(req: DescMessage, noun: string) {
  return req.fields.find((f) => f.fieldKind === "message" && f.message.name === noun);
}

function addFlags(cmd: Command, flags: readonly FieldFlag[], skipRequired = false): void {
  for (const f of flags) {
    const shape =
      f.shape === "list" ? " (repeatable)" : f.shape === "map" ? " key=value (repeatable)" : "";
    const required =
      !f.required || skipRequired
        ? ""
        : f.flag.includes(".")
          ? ` (required with --${f.flag.split(".")[0]}.*)`
          : " (required)";
    // A single true|false flag alone means true (`--public`); its value is then optional.
    const flag = f.type === "true|false" && f.shape === "single";
    const named: NameKind | undefined = namedFlags[f.flag];
    const opt = new Option(
      flag ? `--${f.flag} [value]` : `--${f.flag} <${f.shape === "map" ? "key=value" : "value"}>`,
      `${named ? nameHelp[named] : f.type === "duration" ? `duration: ${durationForms}` : f.type}${flag ? " (alone: true)" : ""}${shape}${required}`,
    );
    if (f.shape !== "single") {
      opt.argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v]);
    }
    cmd.addOption(opt);
  }
}

/** The values given for `flags`, by flag name. */
function givenValues(cmd: Command, flags: readonly FieldFlag[]): Map<string, string | string[]> {
  const out = new Map<string, string | string[]>();
  for (const f of flags) {
    const v = cmd.getOptionValue(new Option(`--${f.flag} <v>`).attributeName());
    if (v === true) out.set(f.flag, "true");
    else if (v !== undefined) out.set(f.flag, v as string | string[]);
  }
  return out;
}

function common(cmd: Command): Command {
  return cmd
    .addOption(
      new Option(
        "-o, --output <format>",
        "table, json, or jsonl (a list: one item a line, every page)",
      ).choices(["table", "json", "jsonl"]),
    )
    .option(
      "--api <url>",
      "the Gatehouse server (env GATEHOUSE_API; default http://localhost:8080)",
    );
}

/** The custom methods that answer a resource (access requests): `<verb> <uid> [--reason]`. */
const answerVerbs = [
  {
    verb: "approve",
    method: "Approve",
    description: "approve a pending request (binds its requester for its duration)",
  },
  { verb: "deny", method: "Deny", description: "deny a pending request" },
] as const;

function addVerbs(parent: Command, r: Resource, ctx: RunContext): void {
  const list = methodOf(r.service, `List${r.plural}`);
  const get = methodOf(r.service, `Get${r.noun}`);
  const createM = methodOf(r.service, `Create${r.noun}`);
  const update = methodOf(r.service, `Update${r.noun}`);
  const del = methodOf(r.service, `Delete${r.noun}`);
  const redeem = methodOf(r.service, `Redeem${r.noun}`);
  // A read-only service (events) may have a List alone: its items give the resource shape.
  const itemsDesc = list?.output.fields.find(
    (f) => f.fieldKind === "list" && f.listKind === "message",
  );
  const resourceDesc =
    get?.output ?? (itemsDesc?.fieldKind === "list" ? itemsDesc.message : undefined);
  if (!list || !resourceDesc) throw new Error(`${r.service.typeName}: no List`);

  // list
  const listFlags = messageFlags(list.input).filter((f) => f.flag !== "page-token");
  const listCmd = common(parent.command("list").description(`list ${spaced(r.plural)}`));
  addFlags(listCmd, listFlags);
  listCmd
    .option("--page-token <token>", "start from this page (the nextPageToken of the previous one)")
    .option(
      "--children-of <group>",
      `one level below this group (uidp.children_of): ${nameHelp.group}`,
    )
    .option(
      "--descendants-of <group>",
      `anywhere below this group (uidp.descendants_of): ${nameHelp.group}`,
    )
    .option("--all", "follow nextPageToken to the last page");
  // A list with a time range (events) takes it relative to now too, and exports it.
  const timed = listFlags.some((f) => f.flag === "start-time");
  if (timed) timeRangeOptions(listCmd);
  const listAction = (cmd: Command) =>
    run(ctx, cmd, async (call) => {
      const opts = cmd.opts();
      const values = givenValues(cmd, listFlags);
      if (timed) setTimeRange(values, opts, Date.now());
      if (opts.childrenOf) values.set("uidp.children-of", opts.childrenOf);
      if (opts.descendantsOf) values.set("uidp.descendants-of", opts.descendantsOf);
      const scope = (values.get("uidp.descendants-of") ?? values.get("uidp.children-of")) as
        | string
        | undefined;
      await resolveNames(call.list, values, { scope });
      const itemsField = list.output.fields.find((f) => f.fieldKind === "list");
      const items: Message[] = [];
      let token: string | undefined = opts.pageToken;
      let last: Message | undefined;
      // JSON Lines stream every page, each item printed as its page arrives: a trail of any
      // length goes out in constant memory.
      const streaming = call.format === "jsonl";
      do {
        const req = messageFromFlags(
          list.input,
          listFlags,
          values,
          token ? { pageToken: token } : {},
        );
        last = (await call.unary(list, req)) as Message;
        const page = (last as Record<string, unknown>)[itemsField?.localName ?? ""] as Message[];
        if (streaming) for (const item of page) printJsonLine(ctx.io, resourceDesc, item as never);
        else items.push(...page);
        token = (last as { nextPageToken?: string }).nextPageToken;
      } while ((opts.all || streaming) && token);
      if (streaming) return;
      if (call.format === "json") {
        const out = { ...(last as Record<string, unknown>), [itemsField?.localName ?? ""]: items };
        if (opts.all) delete out.nextPageToken;
        printJson(ctx.io, list.output, out as never);
      } else {
        printTable(ctx.io, resourceDesc, items as never);
        const total = (last as { totalCount?: bigint }).totalCount;
        const next = opts.all ? undefined : token;
        ctx.io.err(
          `${items.length} of ${total ?? "?"}${next ? `; next page: --page-token ${next}` : ""}\n`,
        );
      }
    });
  listCmd.action(() => listAction(listCmd));

  // export (events): the server's stream of a time range, one JSON line an item as it comes.
  const exportM = methodOf(r.service, `Export${r.plural}`);
  if (exportM?.methodKind === "server_streaming") {
    const exportFlags = messageFlags(exportM.input);
    const exportCmd = common(
      parent
        .command("export")
        .description(
          `every ${spaced(r.noun)} of a time range as JSON Lines, oldest first, in one streamed answer (for a SIEM): --since 24h (required), --until ... (at most 31 days)`,
        ),
    );
    addFlags(exportCmd, exportFlags, true);
    exportCmd
      .option("--descendants-of <group>", `anywhere below this group: ${nameHelp.group}`)
      .option("--children-of <group>", `about this one resource: ${nameHelp.group}`);
    timeRangeOptions(exportCmd);
    exportCmd.action(() =>
      run(ctx, exportCmd, async (call) => {
        const opts = exportCmd.opts();
        const values = givenValues(exportCmd, exportFlags);
        setTimeRange(values, opts, Date.now());
        if (!values.has("start-time")) throw new CliError("--since (or --start-time) is required");
        if (opts.childrenOf) values.set("uidp.children-of", opts.childrenOf);
        if (opts.descendantsOf) values.set("uidp.descendants-of", opts.descendantsOf);
        const scope = (values.get("uidp.descendants-of") ?? values.get("uidp.children-of")) as
          | string
          | undefined;
        await resolveNames(call.list, values, { scope });
        const req = messageFromFlags(exportM.input, exportFlags, values);
        for await (const item of call.stream(exportM, req)) {
          printJsonLine(ctx.io, exportM.output, item as never);
        }
      }),
    );
  }

  // get
  if (get) {
    const getCmd = common(
      parent
        .command("get")
        .description(`get one ${spaced(r.noun)} by uid${r.noun === "Group" ? " or path" : ""}`)
        .argument("<uid>"),
    );
    getCmd.action((given: string) =>
      run(ctx, getCmd, async (call) => {
        const uid = await positionalUid(call, r, given);
        const res = (await call.unary(get, create(get.input, { uid } as never))) as Message;
        call.print(resourceDesc, res);
      }),
    );
  }

  // create
  if (createM) {
    const field = resourceField(createM.input, r.noun);
    const outer = messageFlags(createM.input).filter(
      (f) => !field || !f.protoPath.startsWith(`${field.name}.`),
    );
    const inner = field ? messageFlags(field.message as DescMessage) : [];
    const createCmd = common(parent.command("create").description(`create ${article(r.noun)}`));
    addFlags(createCmd, [...outer, ...inner]);
    const expires = addExpiryFlags(createCmd, inner, false);
    createCmd.action(() =>
      run(ctx, createCmd, async (call) => {
        const values = givenValues(createCmd, [...outer, ...inner]);
        if (expires) expiryValues(createCmd, values);
        for (const f of [...outer, ...inner]) {
          if (
            f.required &&
            f.shape === "single" &&
            f.type === "text" &&
            !values.has(f.flag) &&
            !f.flag.includes(".")
          ) {
            throw new CliError(`--${f.flag} is required`);
          }
        }
        await resolveNames(call.list, values, r.noun === "Tag" ? { skip: ["parent"] } : {});
        const resource = field ? jsonOf(field.message as DescMessage, inner, values) : {};
        const req = messageFromFlags(
          createM.input,
          outer,
          values,
          field ? { [field.jsonName]: resource } : {},
        );
        call.print(resourceDesc, (await call.unary(createM, req)) as Message);
      }),
    );
  }

  // update
  if (update) {
    const field = resourceField(update.input, r.noun);
    if (field) {
      const inner = messageFlags(field.message as DescMessage);
      const updateCmd = common(
        parent
          .command("update")
          .description(`change ${article(r.noun)}: only the fields given (the update mask)`)
          .argument("<uid>"),
      );
      addFlags(updateCmd, inner, true);
      const expires = addExpiryFlags(updateCmd, inner, true);
      updateCmd.action((given: string) =>
        run(ctx, updateCmd, async (call) => {
          const uid = await positionalUid(call, r, given);
          const values = givenValues(updateCmd, inner);
          const forever = expires && expiryValues(updateCmd, values) === "until revoked";
          if (values.size === 0 && !forever)
            throw new CliError("nothing to change: give a flag for each field to change");
          await resolveNames(call.list, values, { scope: uid });
          const resource = { ...jsonOf(field.message as DescMessage, inner, values), uid };
          const req = messageFromFlags(update.input, [], new Map(), { [field.jsonName]: resource });
          const mask = create(FieldMaskSchema, {
            paths: [
              ...inner.filter((f) => values.has(f.flag)).map((f) => f.protoPath),
              // Named with no value: the field is cleared (the binding lasts until revoked).
              ...(forever ? ["expire_time"] : []),
            ],
          });
          (req as Record<string, unknown>).updateMask = mask;
          call.print(resourceDesc, (await call.unary(update, req)) as Message);
        }),
      );
    }
  }

  // delete
  if (del) {
    const delCmd = common(
      parent
        .command("delete")
        .description(`delete ${article(r.noun)}`)
        .argument("<uid>"),
    );
    delCmd.action((given: string) =>
      run(ctx, delCmd, async (call) => {
        const uid = await positionalUid(call, r, given);
        await call.unary(del, create(del.input, { uid } as never));
        ctx.io.out(`deleted ${uid}\n`);
      }),
    );
  }

  // approve, deny (access requests): a uid and an optional reason
  for (const a of answerVerbs) {
    const method = methodOf(r.service, `${a.method}${r.noun}`);
    if (!method) continue;
    const answerCmd = common(
      parent
        .command(a.verb)
        .description(a.description)
        .argument("<uid>")
        .option("--reason <text>", "why (recorded with the answer)"),
    );
    answerCmd.action((given: string) =>
      run(ctx, answerCmd, async (call) => {
        const uid = await positionalUid(call, r, given);
        const reason = (answerCmd.opts() as { reason?: string }).reason ?? "";
        const res = (await call.unary(
          method,
          create(method.input, { uid, reason } as never),
        )) as Message;
        call.print(method.output, res);
      }),
    );
  }

  // redeem (invites)
  if (redeem) {
    const redeemCmd = common(
      parent.command("redeem").description("join a group with an invite code").argument("<code>"),
    );
    redeemCmd.action((code: string) =>
      run(ctx, redeemCmd, async (call) => {
        const res = (await call.unary(redeem, create(redeem.input, { code } as never))) as Message;
        call.print(redeem.output, res);
      }),
    );
  }
}

/**
 * Add `--for <duration>` (and, on update, `--until-revoked`) to a command whose resource has an
 * `expire_time`: the expiry as a duration from now, which is how people think of a grant.
 * Returns whether the resource has one.
 */
function addExpiryFlags(cmd: Command, flags: readonly FieldFlag[], update: boolean): boolean {
  if (!flags.some((f) => f.flag === "expire-time")) return false;
  cmd.option("--for <duration>", `expires this long from now (${durationForms}): --expire-time`);
  if (update) cmd.option("--until-revoked", "no longer expires (clears --expire-time)");
  return true;
}

/**
 * Turn `--for` into the `expire-time` value (an RFC 3339 time from now), refusing it beside
 * `--expire-time` or `--until-revoked`; "until revoked" when `--until-revoked` is given.
 */
function expiryValues(
  cmd: Command,
  values: Map<string, string | string[]>,
): "until revoked" | undefined {
  const opts = cmd.opts() as { for?: string; untilRevoked?: boolean };
  const given = [opts.for, values.get("expire-time"), opts.untilRevoked].filter(
    (v) => v !== undefined,
  );
  if (given.length > 1) {
    throw new CliError("give one of --for, --expire-time and --until-revoked");
  }
  if (opts.untilRevoked) return "until revoked";
  if (opts.for === undefined) return undefined;
  const seconds = parseDurationSeconds(opts.for);
  if (seconds === undefined || seconds === 0) {
    throw new CliError(`--for: not a duration: ${JSON.stringify(opts.for)} (${durationForms})`);
  }
  values.set("expire-time", new Date(Date.now() + seconds * 1000).toISOString());
  return undefined;
}

/** A group's uid as given, or the uid of the group at a path (`acme/eng`); other uids as given. */
function positionalUid(call: Call, r: Resource, given: string): Promise<string> | string {
  return r.noun === "Group" && !isUid(given) ? groupByPath(call.list, "uid", given) : given;
}

/** The protobuf JSON of a resource from its flags, checked by building the message first. */
function jsonOf(
  desc: DescMessage,
  flags: readonly FieldFlag[],
  values: ReadonlyMap<string, string | string[]>,
): Record<string, JsonValue> {
  return toJson(desc, messageFromFlags(desc, flags, values)) as Record<string, JsonValue>;
}

/** A call in progress: the client, the output format. */
interface Call {
  format: OutputFormat;
  /** The exit code of an answered call (0 unless the command's answer says otherwise). */
  exit: number;
  unary(method: DescMethod, req: Message): Promise<unknown>;
  /** A server-streaming call: its messages as they come. */
  stream(method: DescMethod, req: Message): AsyncIterable<Message>;
  /** unary for the name lookups (names.ts). */
  list(method: DescMethod, req: object): Promise<unknown>;
  print(desc: DescMessage, msg: Message): void;
}

/** Run an action: resolve the API and token, call, print; errors become exit codes. */
async function run(ctx: RunContext, cmd: Command, body: (call: Call) => Promise<void>) {
  const opts = cmd.opts() as { api?: string; output?: OutputFormat };
  const api = normalizeApi(opts.api ?? ctx.io.env.GATEHOUSE_API ?? "http://localhost:8080");
  const format: OutputFormat = opts.output ?? (ctx.io.stdoutIsTty ? "table" : "json");
  const token = await apiToken(api, ctx.io);
  const transport: Transport = createConnectTransport({
    baseUrl: api,
    httpVersion: "1.1",
    interceptors: [
      (next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      },
    ],
  });
  const clients = new Map<DescService, Client<DescService>>();
  const clientMethod = <R>(method: DescMethod) => {
    let client = clients.get(method.parent);
    if (!client) {
      client = createClient(method.parent, transport);
      clients.set(method.parent, client);
    }
    const fn = (client as Record<string, (r: Message) => R>)[method.localName];
    if (!fn) throw new Error(`no client method ${method.localName}`);
    return fn;
  };
  const call: Call = {
    format,
    exit: 0,
    unary(method, req) {
      return clientMethod<Promise<unknown>>(method)(req);
    },
    stream(method, req) {
      return clientMethod<AsyncIterable<Message>>(method)(req);
    },
    list(method, req) {
      return call.unary(method, req as Message);
    },
    print(desc, msg) {
      if (call.format === "jsonl") printJsonLine(ctx.io, desc, msg as never);
      else if (call.format === "json") printJson(ctx.io, desc, msg as never);
      else printTable(ctx.io, desc, [msg as never]);
    },
  };
  try {
    await body(call);
    ctx.exit = call.exit;
  } catch (err) {
    if (err instanceof ConnectError) {
      printApiError(ctx.io, err);
      // Refused as unauthenticated: the token is no good here any more (session revoked or
      // expired, identity deleted); the way on is to log in again.
      if (err.code === Code.Unauthenticated) {
        ctx.io.err(`not logged in to ${api} any more: run gatehouse auth login\n`);
        ctx.exit = 3;
        return;
      }
      ctx.exit = 1;
      return;
    }
    throw err;
  }
}

/** --since and --until: a list's time range, relative to now or as a time. */
function timeRangeOptions(cmd: Command): void {
  cmd
    .option("--since <when>", `from this long ago (${durationForms}) or this time (RFC 3339)`)
    .option("--until <when>", `before this long ago (${durationForms}) or this time (RFC 3339)`);
}

/** Set start-time and end-time from --since and --until, taken at `now`. */
function setTimeRange(
  values: Map<string, string | string[]>,
  opts: { since?: string; until?: string },
  now: number,
): void {
  const at = (flag: string, text: string) => {
    const seconds = parseDurationSeconds(text);
    const ms = seconds !== undefined ? now - seconds * 1000 : Date.parse(text);
    if (Number.isNaN(ms)) {
      throw new CliError(
        `--${flag}: ${JSON.stringify(text)} is neither a duration (${durationForms}) nor a time (2026-11-28T00:00:00Z)`,
      );
    }
    return new Date(ms).toISOString();
  };
  if (opts.since !== undefined) values.set("start-time", at("since", opts.since));
  if (opts.until !== undefined) values.set("end-time", at("until", opts.until));
}

/** "RoleBinding" as prose: "role binding". */
function spaced(name: string): string {
  return name.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
}

function article(noun: string): string {
  const words = spaced(noun);
  return `${/^[aeiou]/.test(words) ? "an" : "a"} ${words}`;
}
