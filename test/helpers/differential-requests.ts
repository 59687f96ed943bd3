import {
  type DescMessage,
  type DescMethod,
  fromJson,
  type JsonObject,
  ScalarType,
  toBinary,
} from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { ruleOf } from "../../src/auth/policy.js";
import { grpcEnvelope } from "./raw-grpc.js";

// Requests for any unary method, built from its descriptor and its rule in the policy table,
// so that a method added to the server is exercised without being named here: who calls
// (`Auth`), and which message (`Fixture`). A request is a JSON object; each protocol encodes
// it its own way (`encode`).

/** Who makes a call: the organization's owner, nobody, a forged token, another org's owner. */
export type Auth = "owner" | "none" | "bad" | "other";

/** The callers a fixture is made for. */
export interface Callers {
  /** The organization the requests name. */
  orgUid: string;
  owner: { uid: string; headers: Record<string, string> };
  other: { uid: string; headers: Record<string, string> };
}

/** The protocols a call is compared on: gRPC (binary), Connect with JSON, Connect binary. */
export const wireProtocols = ["grpc", "connect+json", "connect+proto"] as const;
/** One of wireProtocols. */
export type WireProtocol = (typeof wireProtocols)[number];

/** One generated case: a label, a caller and a request message in JSON. */
export interface DiffCase {
  label: string;
  auth: Auth;
  json: JsonObject;
}

/**
 * Whether a method only reads: the proto says so (`idempotency_level = NO_SIDE_EFFECTS`).
 * Only these are called with a well-formed request as the owner: a write that succeeded on
 * one server would leave the other a different store to answer from.
 */
export function readsOnly(method: DescMethod): boolean {
  return method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
}

/** A field naming the caller's own identity: the caller's uid goes there. */
const identityField = /(^|_)identity(_uid)?$/;
/** A field naming a group or resource by uid or id: the organization's uid goes there. */
const referenceField = /(^|_)(u?id|parent|group)$/;

/**
 * The request that names the organization: every top-level string field that refers to a
 * group or resource (`uid`, `parent`, `group_uid`, v1's `id` and `parent_id`...) holds the
 * organization's uid, one naming an identity the caller's own uid, and the path the method's
 * rule authorizes on (`group.uid` of an Update) the organization's uid. As its owner this is
 * a call that succeeds, or is refused by validation or NOT_FOUND; as another organization's
 * owner it is refused by access control.
 */
export function orgRequest(method: DescMethod, orgUid: string, callerUid: string): JsonObject {
  const json: JsonObject = {};
  for (const f of method.input.fields) {
    if (f.fieldKind !== "scalar" || f.scalar !== ScalarType.STRING || f.oneof) continue;
    if (identityField.test(f.name)) json[f.jsonName] = callerUid;
    else if (referenceField.test(f.name)) json[f.jsonName] = orgUid;
  }
  const rule = ruleOf(`${method.parent.typeName}/${method.name}`);
  if (rule?.kind === "resource") setPath(method.input, json, rule.target.split("."), orgUid);
  return json;
}

/** Set the field at a path of proto names (`group.uid`) in a JSON message. */
function setPath(desc: DescMessage, json: JsonObject, path: string[], value: string): void {
  const [name, ...rest] = path;
  const field = desc.fields.find((f) => f.name === name);
  if (!field) throw new Error(`${desc.typeName} has no field ${name}`);
  if (rest.length === 0) {
    json[field.jsonName] = value;
    return;
  }
  if (field.fieldKind !== "message") throw new Error(`${desc.typeName}.${name} is no message`);
  const inner = (json[field.jsonName] ?? {}) as JsonObject;
  json[field.jsonName] = inner;
  setPath(field.message, inner, rest, value);
}

/**
 * The cases every method gets: as its owner, the empty request (validation, NOT_FOUND, or an
 * answer about the caller); the request naming the organization without a token, with a
 * forged one, and as another organization's owner. A method that only reads also gets the
 * organization's request as its owner, and `found` (a request naming a resource that exists)
 * when there is one, as its owner and as another organization's.
 */
export function casesFor(method: DescMethod, callers: Callers, found?: JsonObject): DiffCase[] {
  const org = orgRequest(method, callers.orgUid, callers.owner.uid);
  const cases: DiffCase[] = [
    { label: "the owner, an empty request", auth: "owner", json: {} },
    { label: "no token", auth: "none", json: org },
    { label: "a forged token", auth: "bad", json: org },
    {
      label: "another organization's owner",
      auth: "other",
      json: orgRequest(method, callers.orgUid, callers.other.uid),
    },
  ];
  if (readsOnly(method)) {
    cases.push({ label: "the owner, naming the organization", auth: "owner", json: org });
    if (found) {
      cases.push({ label: "the owner, naming a resource", auth: "owner", json: found });
      cases.push({ label: "another organization's owner, naming it", auth: "other", json: found });
    }
  }
  return cases;
}

/** The headers of a caller. */
export function authHeaders(auth: Auth, callers: Callers): Record<string, string> {
  switch (auth) {
    case "owner":
      return callers.owner.headers;
    case "other":
      return callers.other.headers;
    case "bad":
      return { authorization: "Bearer x.y.z" };
    case "none":
      return {};
  }
}

/** A JSON request as the body of `protocol`: a gRPC envelope, Connect JSON or binary. */
export function encode(method: DescMethod, json: JsonObject, protocol: WireProtocol): Buffer {
  if (protocol === "connect+json") return Buffer.from(JSON.stringify(json));
  const binary = toBinary(method.input, fromJson(method.input, json));
  return protocol === "grpc" ? grpcEnvelope(binary) : Buffer.from(binary);
}

/** The content type each protocol's lean path takes. */
export const contentTypes: Record<WireProtocol, string> = {
  grpc: "application/grpc",
  "connect+json": "application/json",
  "connect+proto": "application/proto",
};

/**
 * In a List answer (JSON), the uid (or v1's id) of the first resource listed: for a request
 * naming a resource that exists. Undefined when the list is empty.
 */
export function firstListed(answer: unknown): { field: "uid" | "id"; value: string } | undefined {
  if (typeof answer !== "object" || answer === null) return undefined;
  for (const v of Object.values(answer)) {
    if (!Array.isArray(v)) continue;
    for (const item of v) {
      if (typeof item !== "object" || item === null) continue;
      const { uid, id } = item as { uid?: unknown; id?: unknown };
      if (typeof uid === "string" && uid !== "") return { field: "uid", value: uid };
      if (typeof id === "string" && id !== "") return { field: "id", value: id };
    }
  }
  return undefined;
}
