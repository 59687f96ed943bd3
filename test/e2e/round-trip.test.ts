import {
  create,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescService,
  getOption,
  hasOption,
  type JsonObject,
  type JsonValue,
  toJson,
} from "@bufbuild/protobuf";
import { type ReflectMessage, reflect } from "@bufbuild/protobuf/reflect";
import { createClient, type Transport } from "@connectrpc/connect";
import { exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../../gen/google/api/annotations_pb.js";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { serviceEntries } from "../../src/service-table.js";
import { maskRulesOf } from "../../src/services/update-mask.js";
import { transportFor } from "../helpers/iam-clients.js";
import { restCall } from "../helpers/rest-client.js";
import {
  type Backend,
  backends,
  startTestServer,
  type TestCaller,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// Every CRUD resource of v2, generated from its descriptors: Create with every writable field
// set (across a resource's variants, every writable field at every depth must be set by one,
// so a field added to the proto fails here until a variant sets it), Get and compare with
// what was sent (a field that storage forgets comes back empty), then Update each mutable
// field alone, with a mask and without, and Get again. Over gRPC, Connect and REST, on both
// backends.

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;

/** What a fixture's functions may use: the organization, an admin, a fresh group. */
interface Env {
  org: TestOrg;
  admin: TestCaller;
  ts: TestServer;
  freshGroup(): Promise<string>;
  jwks: string;
}

/** How to make and change one resource kind. */
interface Fixture {
  /** The parent to create in. */
  parent(env: Env): Promise<string>;
  /** Create bodies (protobuf-es init shapes); together they set every writable field. */
  variants(env: Env): Promise<Record<string, unknown>[]>;
  /** For each mutable top-level field (proto name), a value other than variant 0's. */
  updates?(env: Env): Promise<Record<string, unknown>>;
  /** Input-only fields that an answer shows elsewhere: proto name -> JSON path. */
  shownAs?: Record<string, string>;
}

const sha = (c: string) => `sha256:${c.repeat(64)}`;
let teams = 0;
/** A new team at the organization's root, for what names one. */
const makeTeam = async ({ ts, org, admin }: Env): Promise<string> =>
  (
    await restCall(
      ts.url,
      "POST",
      `/iam/v2beta1/teams/${org.uid}`,
      { name: `t${++teams}` },
      admin.headers,
    )
  ).json.uid as string;

const fixtures: Record<string, Fixture> = {
  "gatehouse.iam.v2beta1.GroupsService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async () => [{ name: "team", description: "the team" }],
    updates: async () => ({ name: "team-2", description: "another" }),
  },
  "gatehouse.iam.v2beta1.IdentitiesService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async ({ jwks }) => [
      {
        name: "ci",
        description: "builds",
        method: {
          case: "claimMatch",
          value: {
            issuer: "https://ci.test",
            subject: "main",
            audience: "gatehouse",
            claims: { repository: "acme/app" },
          },
        },
      },
      {
        name: "ci-patterns",
        method: {
          case: "claimMatch",
          value: {
            issuerPattern: "https://ci\\.test/.*",
            subjectPattern: "repo:acme/.*",
            audiencePattern: "gate.*",
            claimPatterns: { ref: "refs/heads/.*" },
          },
        },
      },
      {
        name: "offline",
        method: {
          case: "staticKeys",
          value: {
            issuer: "https://offline.test",
            subject: "job",
            issuerKeys: jwks,
            expirationTime: {
              seconds: BigInt(Math.floor(Date.now() / 1000) + 30 * 86_400),
              nanos: 250_000_000,
            },
          },
        },
      },
    ],
    updates: async ({ jwks }) => ({
      name: "ci-2",
      description: "deploys",
      claim_match: { issuer: "https://ci2.test", subject: "release" },
      static_keys: { issuer: "https://offline2.test", subject: "job2", issuerKeys: jwks },
    }),
  },
  "gatehouse.iam.v2beta1.RolesService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async () => [
      { name: "reader", description: "reads", capabilities: ["groups.list", "repo.list"] },
    ],
    updates: async () => ({
      name: "reader-2",
      description: "reads more",
      capabilities: ["identities.list"],
    }),
  },
  "gatehouse.iam.v2beta1.RoleBindingsService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async (env) => [
      { identityUid: (await env.ts.makeIdentity(env.org.uid)).uid, roleUid: viewer.uid },
      // A binding to a team, for a while (a fraction of a second: the house writes it).
      {
        teamUid: await makeTeam(env),
        roleUid: viewer.uid,
        expireTime: { seconds: BigInt(Math.floor(Date.now() / 1000) + 3600), nanos: 250_000_000 },
      },
    ],
    updates: async () => ({
      role_uid: editor.uid,
      expire_time: { seconds: BigInt(Math.floor(Date.now() / 1000) + 7200), nanos: 500_000_000 },
    }),
    shownAs: { identity_uid: "identity.uid", role_uid: "role.uid", team_uid: "team.uid" },
  },
  "gatehouse.iam.v2beta1.TeamsService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async () => [{ name: "oncall", description: "pages at night" }],
    updates: async () => ({ name: "oncall-2", description: "pages by day" }),
  },
  "gatehouse.iam.v2beta1.AccessRequestsService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async () => [
      { roleUid: viewer.uid, duration: { seconds: 3600n }, reason: "on call this week" },
    ],
    shownAs: { role_uid: "role.uid" },
  },
  "gatehouse.iam.v2beta1.GroupInvitesService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async () => [
      { roleUid: viewer.uid, email: "new@example.com", singleUse: true, ttl: { seconds: 3600n } },
    ],
    updates: async () => ({ email: "other@example.com", single_use: false, ttl: { seconds: 60n } }),
  },
  "gatehouse.iam.v2beta1.IdentityProvidersService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async (env) => [
      {
        groupMappings: [{ group: "admins", teamUid: await makeTeam(env) }],
        name: "corp",
        description: "staff",
        defaultRole: viewer.uid,
        oidc: {
          issuer: "https://login.example.com",
          clientId: "c",
          clientSecret: "s3cret",
          additionalScopes: ["groups"],
          groupsClaim: "groups",
        },
        emailDomains: ["example.com"],
      },
    ],
    updates: async (env) => ({
      group_mappings: [{ group: "ops", teamUid: await makeTeam(env) }],
      name: "corp-2",
      description: "everyone",
      default_role: editor.uid,
      oidc: { issuer: "https://login2.example.com", clientId: "d", clientSecret: "other" },
      email_domains: ["example.org"],
    }),
  },
  "gatehouse.iam.v2beta1.AccountAssociationsService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async () => [
      {
        name: "cloud",
        description: "accounts",
        amazon: { account: "123456789012" },
        google: { projectId: "acme-prod", projectNumber: "1234567890" },
        azure: {
          tenantId: "72f988bf-86f1-41af-91ab-2d7cd011db47",
          clientIds: ["6d2a0a3e-1111-4c6b-9c1e-0a5f3e2b7c01"],
          clientIdKeys: { prod: "6d2a0a3e-1111-4c6b-9c1e-0a5f3e2b7c01" },
        },
        github: { installationIds: [12345n] },
      },
    ],
    updates: async () => ({
      name: "cloud-2",
      description: "more accounts",
      amazon: { account: "210987654321" },
      google: { projectId: "acme-dev", projectNumber: "987654321" },
      azure: {
        tenantId: "0b3f5b4e-0000-4000-8000-000000000001",
        clientIds: ["6d2a0a3e-2222-4c6b-9c1e-0a5f3e2b7c02"],
        clientIdKeys: { dev: "6d2a0a3e-2222-4c6b-9c1e-0a5f3e2b7c02" },
      },
      github: { installationIds: [67890n] },
    }),
  },
  "gatehouse.registry.v2beta1.ReposService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async () => [{ name: "app", description: "the app", aliases: ["web"], public: true }],
    updates: async () => ({
      name: "app-2",
      description: "renamed",
      aliases: ["site"],
      public: false,
    }),
  },
  "gatehouse.registry.v2beta1.TagsService": {
    parent: async ({ org, admin, ts }) => {
      const repo = await restCall(
        ts.url,
        "POST",
        `/registry/v2beta1/repos/${org.uid}`,
        { name: `tags-${Math.random().toString(36).slice(2, 8)}` },
        admin.headers,
      );
      return repo.json.uid as string;
    },
    variants: async () => [{ name: "v1", digest: sha("a"), deprecated: true }],
  },
  "gatehouse.vulnerabilities.v2beta1.AdvisoriesService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async () => [
      {
        advisoryId: "GO-2024-0001",
        aliases: ["CVE-2024-1234"],
        summary: "bad things",
        artifactName: "app",
        componentName: "stdlib",
        componentType: "golang",
        severities: [{ type: "CVSS_V3", score: "7.5" }],
        events: [
          {
            time: { seconds: 1_704_164_645n, nanos: 250_000_000 },
            type: 4,
            note: "fixed upstream",
            fixedVersion: "1.2.3",
          },
        ],
      },
    ],
    updates: async () => ({
      advisory_id: "GO-2024-0002",
      aliases: ["CVE-2024-9999"],
      summary: "worse things",
      artifact_name: "lib",
      component_name: "net/http",
      component_type: "golang-module",
      severities: [{ type: "CVSS_V4", score: "9.1" }],
      events: [{ time: { seconds: 1_704_250_000n, nanos: 500_000_000 }, type: 1 }],
    }),
  },
  "gatehouse.events.v2beta1.EventsService": {
    parent: async ({ freshGroup }) => freshGroup(),
    variants: async () => [
      {
        name: "hook",
        description: "to the SIEM",
        sink: "https://hooks.example.com/x",
        eventTypes: ["dev.gatehouse.iam.group.created.v1"],
      },
    ],
    updates: async () => ({
      name: "hook-2",
      description: "elsewhere",
      sink: "https://hooks.example.com/y",
      event_types: ["dev.gatehouse.iam.group.deleted.v1"],
    }),
  },
};

const behaviourOf = (f: DescField) =>
  hasOption(f, field_behavior) ? getOption(f, field_behavior) : [];
const isOutput = (f: DescField) =>
  behaviourOf(f).some((b) => b === FieldBehavior.OUTPUT_ONLY || b === FieldBehavior.IDENTIFIER);
const isInputOnly = (f: DescField) => behaviourOf(f).includes(FieldBehavior.INPUT_ONLY);
const isPlainMessage = (f: DescField) =>
  f.fieldKind === "message" && !f.message.typeName.startsWith("google.protobuf.");

/** Every writable leaf of `desc` as a dotted proto path (plain sub-messages descended into). */
function writableLeaves(desc: DescMessage, prefix = ""): string[] {
  return desc.fields
    .filter((f) => !isOutput(f))
    .flatMap((f) =>
      isPlainMessage(f) && f.fieldKind === "message"
        ? writableLeaves(f.message, `${prefix}${f.name}.`)
        : [`${prefix}${f.name}`],
    );
}

/** The leaves set in `r`, as dotted proto paths. */
function setLeaves(r: ReflectMessage, prefix = ""): string[] {
  return r.fields
    .filter((f) => r.isSet(f))
    .flatMap((f) =>
      isPlainMessage(f) && f.fieldKind === "message"
        ? setLeaves(r.get(f) as ReflectMessage, `${prefix}${f.name}.`)
        : [`${prefix}${f.name}`],
    );
}

/** `sent` without its input-only fields, at any depth (they are never answered). */
function answerable(desc: DescMessage, sent: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const f of desc.fields) {
    const v = sent[f.jsonName];
    if (v === undefined || isInputOnly(f)) continue;
    out[f.jsonName] =
      isPlainMessage(f) && f.fieldKind === "message" && v !== null && typeof v === "object"
        ? answerable(f.message, v as JsonObject)
        : v;
  }
  return out;
}

const at = (json: JsonValue, path: string): JsonValue | undefined =>
  path
    .split(".")
    .reduce<JsonValue | undefined>(
      (v, k) =>
        v && typeof v === "object" && !Array.isArray(v) ? (v as JsonObject)[k] : undefined,
      json,
    );

/** A resource's five methods and the request fields that carry the resource. */
function crudOf(service: DescService) {
  const find = (verb: string) => service.methods.find((m) => m.name.startsWith(verb));
  const create = find("Create")!;
  const resourceField = create.input.fields.find((f) => f.fieldKind === "message")!;
  const resource = (resourceField as DescField & { message: DescMessage }).message;
  return { create, get: find("Get")!, update: find("Update"), resource, resourceField };
}

/** The REST path of `method` with its one path variable set to `value`. */
function restPath(method: DescMethod, value: string): { verb: string; path: string } {
  const rule = getOption(method, http);
  const { case: verb, value: template } = rule.pattern;
  return { verb: String(verb).toUpperCase(), path: String(template).replace(/\{[^}]+\}/, value) };
}

type Caller = (method: DescMethod, req: Record<string, unknown>) => Promise<JsonObject>;

/** Call over gRPC or Connect with a generated client; answer the response's resource JSON. */
function rpcCaller(transport: Transport, service: DescService): Caller {
  const client = createClient(service, transport) as unknown as Record<
    string,
    (r: unknown) => Promise<unknown>
  >;
  return async (method, req) => {
    const res = await client[method.localName]!(req);
    return toJson(method.output, res as never) as JsonObject;
  };
}

/** Call over REST: the request's fields in the path, the resource as the JSON body. */
function restCaller(ts: TestServer, headers: Record<string, string>): Caller {
  return async (method, req) => {
    const rule = getOption(method, http);
    const msg = create(method.input, req as never);
    const json = toJson(method.input, msg) as JsonObject;
    const bodyField = method.input.fields.find((f) => f.name === rule.body);
    const pathValue =
      method.name.startsWith("Update") && bodyField
        ? String((json[bodyField.jsonName] as JsonObject).uid)
        : String(json.parent ?? json.uid);
    const { verb, path: base } = restPath(method, pathValue);
    let path = base;
    const mask = json.updateMask;
    if (typeof mask === "string" && mask !== "") path += `?updateMask=${mask}`;
    const body = bodyField ? json[bodyField.jsonName] : undefined;
    const r = await restCall(ts.url, verb, path, body, headers);
    if (r.status !== 200) throw new Error(`${verb} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json as JsonObject;
  };
}

const crudServices = serviceEntries
  .map((e) => e.service)
  .filter((s) => s.typeName.includes(".v2beta1."))
  .filter((s) => ["Create", "Get"].every((v) => s.methods.some((m) => m.name.startsWith(v))))
  // A resource's CRUD: Create takes the message Get answers (not SCIM's token and connection).
  .filter((s) => {
    const get = s.methods.find((m) => m.name.startsWith("Get"))!;
    const make = s.methods.find((m) => m.name.startsWith("Create"))!;
    return make.input.fields.some((f) => f.message?.typeName === get.output.typeName);
  });

describe("the round-trip fixtures", () => {
  it("cover every v2 service with Create and Get", () => {
    expect(crudServices.map((s) => s.typeName).sort()).toEqual(Object.keys(fixtures).sort());
  });
});

describe.each(backends)("round trip on %s", (backend: Backend) => {
  let ts: TestServer;
  let env: Env;
  beforeAll(async () => {
    ts = await startTestServer({}, { backend });
    const org = await ts.makeOrg(`round-trip-${backend}`);
    const admin = await ts.makeIdentity(org.uid, ["owner", "advisories.admin"]);
    const { publicKey } = await generateKeyPair("ES256", { extractable: true });
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1" }] });
    let n = 0;
    const freshGroup = async () =>
      (
        await restCall(
          ts.url,
          "POST",
          `/iam/v2beta1/groups/${org.uid}`,
          { name: `g${n++}` },
          admin.headers,
        )
      ).json.uid as string;
    env = { org, admin, ts, freshGroup, jwks };
  });
  afterAll(() => ts?.close());

  describe.each(crudServices.map((s) => [s.typeName, s] as const))("%s", (name, service) => {
    const fixture = fixtures[name]!;
    const { create: createM, get, update, resource, resourceField } = crudOf(service);

    it("sets every writable field in some variant, and has an update for every mutable one", async () => {
      const variants = await fixture.variants(env);
      const set = new Set(
        variants.flatMap((v) => setLeaves(reflect(resource, create(resource, v as never)))),
      );
      expect(writableLeaves(resource).filter((leaf) => !set.has(leaf))).toEqual([]);
      if (update) {
        const updates = Object.keys((await fixture.updates?.(env)) ?? {});
        expect(updates.sort()).toEqual([...maskRulesOf(resource).mutable].sort());
      }
    });

    it.each(["grpc", "connect", "rest"] as const)("over %s", async (protocol) => {
      const call: Caller =
        protocol === "rest"
          ? restCaller(ts, env.admin.headers)
          : rpcCaller(transportFor(protocol, ts.url, env.admin.headers), service);
      const fieldJson = (protoName: string) => resource.fields.find((f) => f.name === protoName)!;
      /** Get `uid` and check that it shows `sent` (its answerable fields, at any depth). */
      const expectShows = async (uid: string, sent: JsonObject) => {
        const got = await call(get, { uid });
        expect(got).toMatchObject(answerable(resource, sent));
        for (const [input, path] of Object.entries(fixture.shownAs ?? {})) {
          const f = fieldJson(input);
          if (sent[f.jsonName] !== undefined) expect(at(got, path)).toEqual(sent[f.jsonName]);
        }
        return got;
      };

      for (const [index, variant] of (await fixture.variants(env)).entries()) {
        const parent = await fixture.parent(env);
        const msg = create(resource, variant as never);
        const sent = toJson(resource, msg) as JsonObject;
        const made = await call(createM, { parent, [resourceField.localName]: msg });
        const uid = String(made.uid);
        expect(made).toMatchObject(answerable(resource, sent));
        await expectShows(uid, sent);
        // The variants are for Create's coverage; the updates start from the first.
        if (!update || index > 0) continue;

        // Each mutable field alone: with a mask to its update value, then without a mask back
        // to the variant's value (when the variant sets it).
        const updates = (await fixture.updates?.(env)) ?? {};
        for (const [field, value] of Object.entries(updates)) {
          const f = fieldJson(field);
          const oneof = f.oneof;
          const init = oneof
            ? { [oneof.localName]: { case: f.localName, value } }
            : { [f.localName]: value };
          const withValue = create(resource, { uid, ...init } as never);
          const nextJson = toJson(resource, withValue) as JsonObject;
          await call(update, {
            [resourceField.localName]: withValue,
            updateMask: { paths: [field] },
          });
          await expectShows(uid, { [f.jsonName]: nextJson[f.jsonName] as JsonValue });
          if (sent[f.jsonName] === undefined) continue;
          const back = create(resource, { ...(variant as object), uid } as never);
          const only = create(resource, { uid } as never);
          const r = reflect(resource, only);
          const b = reflect(resource, back);
          r.set(f, b.get(f) as never);
          await call(update, { [resourceField.localName]: only });
          await expectShows(uid, { [f.jsonName]: sent[f.jsonName] as JsonValue });
        }
      }
    });
  });
});
