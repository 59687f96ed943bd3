import {
  type DescField,
  type DescMessage,
  type DescMethodUnary,
  type DescService,
  fromJson,
  type JsonValue,
  ScalarType,
} from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { expect } from "vitest";
import { GroupAccountAssociationsService } from "../../gen/gatehouse/iam/v1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/gatehouse/iam/v1/group_invites_pb.js";
import { GroupsService } from "../../gen/gatehouse/iam/v1/groups_pb.js";
import { IdentitiesService } from "../../gen/gatehouse/iam/v1/identities_pb.js";
import { IdentityProvidersService } from "../../gen/gatehouse/iam/v1/identity_providers_pb.js";
import { RoleBindingsService } from "../../gen/gatehouse/iam/v1/role_bindings_pb.js";
import { RolesService } from "../../gen/gatehouse/iam/v1/roles_pb.js";
import { RegistryService } from "../../gen/gatehouse/registry/v1/registry_pb.js";
import { AdvisoriesService } from "../../gen/gatehouse/vulnerabilities/v1/advisories_pb.js";
import { serviceEntries } from "../../src/service-table.js";
import { apiJson } from "./api-json.js";
import { connectErr } from "./groups-clients.js";
import { transportFor } from "./iam-clients.js";
import { type Json, restCall } from "./rest-client.js";

/** How a v1 resource is reached: its REST prefix and collection, its gRPC service, its fields. */
export interface V1Resource {
  /** `/iam/v1/groups`. */
  readonly path: string;
  readonly service: DescService;
  /** The Create request's parent field and resource field (proto names). */
  readonly parentField: string;
  readonly bodyField: string;
  /** The Update request's key field, set from the path (`id`; `group` for associations). */
  readonly keyField?: string;
  /** The method names, when not Create, Update, List and Delete (the registry's). */
  readonly methods?: { create: string; update: string; list: string; delete: string };
}

/** The v1 resources under test, by name. */
export const v1Resources = {
  groups: {
    path: "/iam/v1/groups",
    service: GroupsService,
    parentField: "parent",
    bodyField: "group",
  },
  identities: {
    path: "/iam/v1/identities",
    service: IdentitiesService,
    parentField: "parent_id",
    bodyField: "identity",
  },
  roles: {
    path: "/iam/v1/roles",
    service: RolesService,
    parentField: "parent_id",
    bodyField: "role",
  },
  rolebindings: {
    path: "/iam/v1/rolebindings",
    service: RoleBindingsService,
    parentField: "parent",
    bodyField: "role_binding",
  },
  identityProviders: {
    path: "/iam/v1/identityProviders",
    service: IdentityProvidersService,
    parentField: "parent_id",
    bodyField: "identity_provider",
  },
  // Keyed by group; the body is the whole record (body "*").
  accountAssociations: {
    path: "/iam/v1/account_associations",
    service: GroupAccountAssociationsService,
    parentField: "group",
    bodyField: "*",
    keyField: "group",
  },
  groupInvites: {
    path: "/iam/v1/group_invites",
    service: GroupInvitesService,
    parentField: "group",
    bodyField: "*",
  },
  repos: {
    path: "/registry/v1/repos",
    service: RegistryService,
    parentField: "parent_id",
    bodyField: "repo",
    methods: {
      create: "CreateRepo",
      update: "UpdateRepo",
      list: "ListRepos",
      delete: "DeleteRepo",
    },
  },
  // Create takes the parent in the body, at the collection's own path.
  advisories: {
    path: "/vulnerabilities/v1/advisories",
    service: AdvisoriesService,
    parentField: "parent_id",
    bodyField: "advisory",
  },
  tags: {
    path: "/registry/v1/tags",
    service: RegistryService,
    parentField: "repo_id",
    bodyField: "tag",
    methods: { create: "CreateTag", update: "UpdateTag", list: "ListTags", delete: "DeleteTag" },
  },
} satisfies Record<string, V1Resource>;

/** Typed clients of the v1 services over one transport. */
export interface V1Clients {
  groups: Client<typeof GroupsService>;
  identities: Client<typeof IdentitiesService>;
  roles: Client<typeof RolesService>;
  roleBindings: Client<typeof RoleBindingsService>;
  identityProviders: Client<typeof IdentityProvidersService>;
  accountAssociations: Client<typeof GroupAccountAssociationsService>;
  groupInvites: Client<typeof GroupInvitesService>;
  registry: Client<typeof RegistryService>;
  advisories: Client<typeof AdvisoriesService>;
}

/** Every v1 service: the service table's adapters. */
export const v1Services: readonly DescService[] = serviceEntries
  .filter((e) => e.adapter)
  .map((e) => e.service);

/** Create the v1 clients over `transport`. */
export function v1Clients(transport: Transport): V1Clients {
  return {
    groups: createClient(GroupsService, transport),
    identities: createClient(IdentitiesService, transport),
    roles: createClient(RolesService, transport),
    roleBindings: createClient(RoleBindingsService, transport),
    identityProviders: createClient(IdentityProvidersService, transport),
    accountAssociations: createClient(GroupAccountAssociationsService, transport),
    groupInvites: createClient(GroupInvitesService, transport),
    registry: createClient(RegistryService, transport),
    advisories: createClient(AdvisoriesService, transport),
  };
}

/** A v1 answer: OK with the JSON v1 REST would send, or an error's gRPC code and HTTP status. */
export type V1Reply =
  | { ok: true; json: Json }
  | { ok: false; code: number; status?: number; message?: string };

/** The two ways the v1 suites call: REST paths with fetch, and gRPC with connect-node. */
export const v1Protocols = ["rest", "grpc"] as const;
export type V1Protocol = (typeof v1Protocols)[number];

/**
 * A v1 client of one caller over one protocol, speaking JSON either way: over gRPC the
 * request is built from the same JSON (query keys as dotted field paths, proto or JSON
 * names) and the answer is turned into the JSON v1 REST sends, so one suite checks both.
 */
export interface V1Client {
  create(r: V1Resource, parent: string, body: Json): Promise<V1Reply>;
  update(r: V1Resource, id: string, body: Json): Promise<V1Reply>;
  list(r: V1Resource, query: [string, string][]): Promise<V1Reply>;
  delete(r: V1Resource, id: string): Promise<V1Reply>;
  /** Any other method, by name, with its request as JSON and its REST call. */
  call(
    r: V1Resource,
    method: string,
    request: Json,
    rest: { method: string; path: string; body?: unknown },
  ): Promise<V1Reply>;
}

/** Create a V1Client for `baseUrl` sending `headers`. */
export function v1Client(
  protocol: V1Protocol,
  baseUrl: string,
  headers: Record<string, string>,
): V1Client {
  const transport = transportFor("grpc", baseUrl, headers);
  const grpcCall = async (r: V1Resource, method: string, request: Json): Promise<V1Reply> => {
    const m = r.service.methods.find((x) => x.name === method) as DescMethodUnary | undefined;
    if (!m) throw new Error(`${r.service.typeName} has no ${method}`);
    const client = createClient(r.service, transport) as unknown as Record<
      string,
      (req: unknown) => Promise<unknown>
    >;
    try {
      const res = await client[m.localName]!(fromJson(m.input, request as JsonValue));
      return {
        ok: true,
        json: apiJson(m.output as DescMessage, res as never as never),
      };
    } catch (e) {
      const err = connectErr(e);
      return { ok: false, code: err.code, message: err.message };
    }
  };
  const restDo = async (method: string, path: string, body?: unknown): Promise<V1Reply> => {
    const res = await restCall(baseUrl, method, path, body, headers);
    if (res.status === 200) return { ok: true, json: res.json };
    return { ok: false, code: res.json.code, status: res.status, message: res.json.message };
  };
  return {
    create(r, parent, body) {
      if (protocol === "rest") return restDo("POST", `${r.path}/${parent}`, body);
      const request =
        r.bodyField === "*"
          ? { ...body, [r.parentField]: parent }
          : { [r.parentField]: parent, [r.bodyField]: body };
      return grpcCall(r, r.methods?.create ?? "Create", request);
    },
    update(r, id, body) {
      if (protocol === "rest") return restDo("PUT", `${r.path}/${id}`, body);
      return grpcCall(r, r.methods?.update ?? "Update", { ...body, [r.keyField ?? "id"]: id });
    },
    list(r, query) {
      if (protocol === "rest") return restDo("GET", `${r.path}?${new URLSearchParams(query)}`);
      const name = r.methods?.list ?? "List";
      const input = r.service.methods.find((m) => m.name === name)!.input;
      return grpcCall(r, name, queryToJson(input, query));
    },
    delete(r, id) {
      if (protocol === "rest") return restDo("DELETE", `${r.path}/${id}`);
      return grpcCall(r, r.methods?.delete ?? "Delete", { [r.keyField ?? "id"]: id });
    },
    call(r, method, request, rest) {
      if (protocol === "rest") return restDo(rest.method, rest.path, rest.body);
      return grpcCall(r, method, request);
    },
  };
}

/**
 * Dotted query keys as the nested JSON of `schema`, as v1's gateway read them: each part by
 * its proto or JSON name; a repeated field collects its repetitions; a bool takes "true".
 */
function queryToJson(schema: DescMessage, query: [string, string][]): Json {
  const out: Json = {};
  for (const [key, value] of query) {
    let desc: DescMessage | undefined = schema;
    let node = out;
    const parts = key.split(".");
    for (const [k, part] of parts.entries()) {
      const field: DescField | undefined = desc?.fields.find(
        (f) => f.name === part || f.jsonName === part,
      );
      if (!field) break; // Unknown keys are ignored, as over REST.
      if (k < parts.length - 1) {
        node[field.name] = node[field.name] ?? {};
        node = node[field.name];
        desc = field.fieldKind === "message" ? field.message : undefined;
        continue;
      }
      if (field.fieldKind === "list") node[field.name] = [...(node[field.name] ?? []), value];
      else if (field.fieldKind === "scalar" && field.scalar === ScalarType.BOOL) {
        node[field.name] = value === "true";
      } else node[field.name] = value;
    }
  }
  return out;
}

/** The JSON of an answer that must be OK; throws with the whole answer otherwise. */
export function okJson(r: { ok: boolean; json?: Json; message?: string }): Json {
  if (!r.ok) throw new Error(`call failed: ${JSON.stringify(r)}`);
  return r.json as Json;
}

/** The `key` (default: id) of each item of a list answer, sorted. */
export function idsOf(json: Json, key = "id"): string[] {
  return (json.items as Json[]).map((x) => x[key] as string).sort();
}

/** The uidp filters of every v1 List, each spelled by its proto name and by its JSON name. */
const uidpFilters = {
  children_of: "childrenOf",
  descendants_of: "descendantsOf",
  ancestors_of: "ancestorsOf",
  in_root: "inRoot",
} as const;

/**
 * The ids that listing `r` with the one uidp filter `filter` = `value` answers (sorted),
 * asking under both its names: they must answer alike.
 */
export async function uidpIds(
  c: V1Client,
  r: V1Resource,
  filter: keyof typeof uidpFilters,
  value: string,
): Promise<string[]> {
  const byProtoName = idsOf(okJson(await c.list(r, [[`uidp.${filter}`, value]])));
  const byJsonName = idsOf(okJson(await c.list(r, [[`uidp.${uidpFilters[filter]}`, value]])));
  expect(byJsonName, `uidp.${uidpFilters[filter]} against uidp.${filter}`).toEqual(byProtoName);
  return byProtoName;
}
