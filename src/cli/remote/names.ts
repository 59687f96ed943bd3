import { create, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { GroupsService } from "../../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { RolesService } from "../../../gen/gatehouse/iam/v2beta1/roles_pb.js";
import { builtinRoles } from "../../auth/capabilities.js";
import { depthOf, isUid, rootOf } from "../../uid.js";
import { CliError } from "../cli-io.js";

/** How a name is looked up: one List call of the API (the caller's token, its visibility). */
export type Lister = (method: DescMethod, req: object) => Promise<unknown>;

/** What a flag names, when it is given a name instead of a uid. */
export type NameKind = "group" | "identity" | "role";

/** The flags whose value is a uid of this kind, and so may be given as a name. */
export const namedFlags: Readonly<Record<string, NameKind>> = {
  parent: "group",
  "group-uid": "group",
  "uidp.descendants-of": "group",
  "uidp.children-of": "group",
  "uidp.ancestors-of": "group",
  "identity-uid": "identity",
  "role-uid": "role",
  "default-role": "role",
  role: "role",
};

/** What the help text of such a flag adds. */
export const nameHelp: Readonly<Record<NameKind, string>> = {
  group: "a uid, or the group's path of names from its organization: acme/eng/web",
  identity: "a uid, or an identity's name or email (unique in the organization)",
  role: "a uid, or a role's name (built-in, or unique in the organization)",
};

const pageSize = 200;
/** The most matches read for one name: more is a name nobody can pick out anyway. */
const maxPages = 5;

function method(service: DescService, name: string): DescMethod {
  const m = service.methods.find((x) => x.name === name);
  if (!m) throw new Error(`${service.typeName} has no ${name}`);
  return m;
}

/** Every item of a List (up to maxPages pages) for `filters`. */
async function listAll<T>(
  list: Lister,
  m: DescMethod,
  field: string,
  filters: Record<string, unknown>,
): Promise<T[]> {
  const out: T[] = [];
  let pageToken = "";
  for (let i = 0; i < maxPages; i++) {
    const res = (await list(m, create(m.input, { ...filters, pageSize, pageToken } as never))) as {
      nextPageToken?: string;
    } & Record<string, T[]>;
    out.push(...(res[field] ?? []));
    pageToken = res.nextPageToken ?? "";
    if (!pageToken) break;
  }
  return out;
}

/** One match, or a usage error naming none or every match (uid and how it reads). */
function one<T extends { uid: string }>(
  flag: string,
  what: string,
  matches: T[],
  show: (m: T) => string,
): string {
  if (matches.length === 1) return (matches[0] as T).uid;
  if (matches.length === 0) throw new CliError(`--${flag}: no ${what} you may read`);
  throw new CliError(
    `--${flag}: ${matches.length} ${what}s match; give one's uid:\n${matches
      .map((m) => `  ${m.uid}  ${show(m)}`)
      .join("\n")}`,
  );
}

/**
 * The uid of the group at `path` (`acme/eng/web`: an organization's name, then the names of
 * the groups below it): each step lists the groups of that name one level below the
 * groups of the step before, as the caller may read them.
 */
export async function groupByPath(list: Lister, flag: string, path: string): Promise<string> {
  const names = path.split("/").filter((n) => n !== "");
  if (names.length === 0) throw new CliError(`--${flag}: give a group uid or path`);
  const groups = method(GroupsService, "ListGroups");
  type G = { uid: string; name: string };
  let at: { uid: string; path: string }[] = [];
  for (const [i, name] of names.entries()) {
    const found: { uid: string; path: string }[] = [];
    if (i === 0) {
      const roots = await listAll<G>(list, groups, "groups", { name, uidp: { inRoot: true } });
      for (const g of roots) if (depthOf(g.uid) === 0) found.push({ uid: g.uid, path: g.name });
    } else {
      for (const parent of at) {
        const children = await listAll<G>(list, groups, "groups", {
          name,
          uidp: { childrenOf: parent.uid },
        });
        for (const g of children) found.push({ uid: g.uid, path: `${parent.path}/${g.name}` });
      }
    }
    if (found.length === 0) {
      const where = i === 0 ? "organization" : `group below ${names.slice(0, i).join("/")}`;
      throw new CliError(`--${flag}: no ${where} named ${JSON.stringify(name)} that you may read`);
    }
    at = found;
  }
  return one(flag, `group at ${JSON.stringify(path)}`, at, (g) => g.path);
}

/**
 * The uid of the identity named `text` (or whose email it is) in the organization of `scope`
 * (anywhere the caller may read identities, without one).
 */
export async function identityByName(
  list: Lister,
  flag: string,
  text: string,
  scope: string | undefined,
): Promise<string> {
  const identities = method(IdentitiesService, "ListIdentities");
  type I = { uid: string; name: string; email: string };
  const uidp = scope && isUid(scope) ? { uidp: { descendantsOf: rootOf(scope) } } : {};
  const inOrg = (i: I) => !scope || !isUid(scope) || rootOf(i.uid) === rootOf(scope);
  let matches: I[];
  if (text.includes("@")) {
    // No email filter in the API: the identities the caller may read, matched here.
    const all = await listAll<I>(list, identities, "identities", uidp);
    matches = all.filter((i) => i.email.toLowerCase() === text.toLowerCase() && inOrg(i));
  } else {
    matches = (await listAll<I>(list, identities, "identities", { name: text, ...uidp })).filter(
      inOrg,
    );
  }
  const where = scope && isUid(scope) ? ` in organization ${rootOf(scope)}` : "";
  return one(flag, `identity ${JSON.stringify(text)}${where}`, matches, (i) =>
    [i.name, i.email && `<${i.email}>`].filter(Boolean).join(" "),
  );
}

/** The uid of the role named `text`: a built-in one, or a custom one of `scope`'s organization. */
export async function roleByName(
  list: Lister,
  flag: string,
  text: string,
  scope: string | undefined,
): Promise<string> {
  const builtin = builtinRoles.find((r) => r.name === text);
  if (builtin) return builtin.uid;
  if (!scope || !isUid(scope)) {
    throw new CliError(
      `--${flag}: ${JSON.stringify(text)} is not a built-in role (${builtinRoles
        .map((r) => r.name)
        .join(", ")}); give a role uid, or the group the command is about`,
    );
  }
  const roles = method(RolesService, "ListRoles");
  const matches = await listAll<{ uid: string; name: string }>(list, roles, "roles", {
    name: text,
    uidp: { descendantsOf: rootOf(scope) },
  });
  return one(
    flag,
    `role named ${JSON.stringify(text)} in organization ${rootOf(scope)}`,
    matches,
    (r) => r.name,
  );
}

/**
 * Replace each name given to a uid flag (namedFlags) by the uid it names, in place: groups
 * first, so that an identity or a role is looked up in the organization of the group the
 * command is about (its --parent, --group-uid or list filter, else `scope`). Flags in `skip`
 * are left as given (a tag's --parent is a repo).
 */
export async function resolveNames(
  list: Lister,
  values: Map<string, string | string[]>,
  opts: { scope?: string | undefined; skip?: readonly string[] } = {},
): Promise<void> {
  const named = (kind: NameKind) =>
    [...values.entries()].filter(
      (e): e is [string, string] =>
        namedFlags[e[0]] === kind &&
        !opts.skip?.includes(e[0]) &&
        typeof e[1] === "string" &&
        e[1] !== "" &&
        !isUid(e[1]),
    );
  for (const [flag, v] of named("group")) values.set(flag, await groupByPath(list, flag, v));
  const scope = (["parent", "group-uid", "uidp.descendants-of", "uidp.children-of"]
    .map((f) => values.get(f))
    .find((v) => typeof v === "string" && isUid(v)) ?? opts.scope) as string | undefined;
  for (const [flag, v] of named("identity")) {
    values.set(flag, await identityByName(list, flag, v, scope));
  }
  for (const [flag, v] of named("role")) values.set(flag, await roleByName(list, flag, v, scope));
}
