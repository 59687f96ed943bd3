import type { DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import type { Interceptor } from "@connectrpc/connect";
import { kPrincipal } from "../auth/principal.js";
import { kCallInfo } from "../call-info.js";
import { kCallChange } from "../call-store.js";
import { requestHeaderOf } from "../pipeline/unary-invocation.js";
import { serviceEntries } from "../service-table.js";
import type { Store } from "../store/store.js";
import { type AuditScope, unrecordable } from "./audit-scope.js";

/**
 * Whether an RPC may change something: every RPC its proto does not mark
 * `idempotency_level = NO_SIDE_EFFECTS` (every Get, List and check is marked).
 */
export function isMutating(method: DescMethod): boolean {
  return method.idempotency !== MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
}

/**
 * The CloudEvents type of a change made by a mutating v2 RPC, derived from its descriptor: the
 * API domain from the package, the verb and the resource from the method name (a v2 method is
 * `<Verb><Resource>`). `gatehouse.iam.v2beta1` and `CreateGroupInvite` give
 * `dev.gatehouse.iam.group_invite.created.v1`; a method without a noun (`Exchange`) takes its
 * service's (`security_token`); a batch (`BatchCreateRoleBindings`) its items' type
 * (`role_binding.created`). A v1 RPC has no type of its own: each change it makes is a v2
 * call recorded under that call's type (adapterCallScope), so both versions record one type.
 */
export function eventTypeOf(service: DescService, method: DescMethod): string {
  const domain = service.typeName.split(".")[1] ?? "api";
  let words: string[] = method.name.match(/[A-Z][a-z0-9]*/g) ?? [method.name];
  // A batch (`BatchCreateRoleBindings`, AIP-233) makes each change one call of its verb
  // would: the singular resource's type, one event per item.
  if (words[0] === "Batch" && words.length > 2) {
    words = words.slice(1).map((w, i, all) => (i === all.length - 1 ? w.replace(/s$/, "") : w));
  }
  const verb = words[0]!.toLowerCase();
  const noun =
    words.length > 1
      ? words.slice(1)
      : (service.name.replace(/Service$/, "").match(/[A-Z][a-z0-9]*/g) ?? []);
  const resource = noun.map((w) => w.toLowerCase()).join("_");
  return `dev.gatehouse.${domain}.${resource}.${pastTense(verb)}.v1`;
}

function pastTense(verb: string): string {
  // Deny gives denied (not "denyed").
  if (/[^aeiou]y$/.test(verb)) return `${verb.slice(0, -1)}ied`;
  return verb.endsWith("e") ? `${verb}d` : `${verb}ed`;
}

/** The v1 adapters' services: their RPCs change nothing but through v2 calls. */
const adapterServices = new Set(
  serviceEntries.filter((e) => e.adapter).map((e) => e.service.typeName),
);

/** The type of `method`, derived once per method (eventTypeOf). */
const typeOf = (() => {
  const types = new Map<DescMethod, string>();
  return (method: DescMethod): string => {
    let type = types.get(method);
    if (type === undefined) {
      type = eventTypeOf(method.parent, method);
      types.set(method, type);
    }
    return type;
  };
})();

/** What a mutating call's request says about its change: its type, subject and mask. */
function changeOf(method: DescMethod, request: unknown) {
  const message = request as Record<string, unknown>;
  const mask = (message.updateMask as { paths?: string[] } | undefined)?.paths;
  return {
    type: typeOf(method),
    requestUid: requestUid(message, method.input),
    ...(mask ? { changedFields: [...mask] } : {}),
  };
}

/**
 * The scope of one v2 call a v1 adapter makes while serving `outer` (the v1 call's scope): the
 * v2 method's type, subject and mask, the v1 call's source, actor, request id and protocol, and
 * an event of its own (a v1 batch records one per binding). Undefined for a read, or outside
 * any audited call.
 */
export function adapterCallScope(
  outer: AuditScope | undefined,
  method: DescMethod,
  request: unknown,
): AuditScope | undefined {
  if (!outer || !isMutating(method)) return undefined;
  return {
    source: outer.source,
    actorUid: outer.actorUid,
    requestId: outer.requestId,
    protocol: outer.protocol,
    ...changeOf(method, request),
    recorded: false,
  };
}

/**
 * Create the interceptor that opens the audit scope of every mutating RPC, after the access
 * interceptor (so the caller is known), and hands the call's handler the store's view for it
 * (kCallChange, src/call-store.ts): the store writes the call's event with its change. A read
 * gets neither. A v1 adapter's scope has no type (`unrecordable`): its changes are recorded by
 * the v2 calls it makes (adapterCallScope), and a write of its own, outside one, is refused
 * (eventFor).
 */
export function createAuditInterceptor(store: Pick<Store, "recording">): Interceptor {
  return (next) => async (req) => {
    if (!isMutating(req.method)) return next(req);
    const adapter = adapterServices.has(req.service.typeName);
    const scope: AuditScope = {
      ...(adapter ? { type: unrecordable, requestUid: "" } : changeOf(req.method, req.message)),
      source: `/${req.service.typeName}`,
      actorUid: req.contextValues.get(kPrincipal)?.identityUid ?? "",
      requestId: req.contextValues.get(kCallInfo)?.requestId ?? "",
      protocol: protocolOf(req, req.url),
      recorded: false,
    };
    const view = store.recording(scope);
    req.contextValues.set(kCallChange, { scope, store: view });
    const res = await next(req);
    // An exchange of a workload's token stores nothing, yet is recorded: subject and actor
    // are the identity the token was issued for (its `sub`; the token is never kept).
    if (!scope.recorded && recordedAlone.has(req.method.name)) {
      await view.recordChange(subOf((res.message as { token?: unknown }).token));
    }
    return res;
  };
}

/**
 * Create the interceptor that hands each mutating RPC's handler the store itself as its call's
 * store (kCallChange, no scope): for a server whose audit trail is off (ServerDeps.auditTrail,
 * the events benchmark's baseline), whose changes record nothing.
 */
export function createUnrecordedChanges(store: Store): Interceptor {
  const change = { store };
  return (next) => async (req) => {
    if (isMutating(req.method)) req.contextValues.set(kCallChange, change);
    return next(req);
  };
}

/** RPCs recorded even when they store nothing. */
const recordedAlone = new Set(["Exchange"]);

/** The `sub` of a JWT the server just minted, or "". */
function subOf(token: unknown): string {
  if (typeof token !== "string") return "";
  try {
    const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString());
    return typeof payload.sub === "string" ? payload.sub : "";
  } catch {
    return "";
  }
}

/** The uid a request names: its own `uid` field, or its resource message's. */
function requestUid(message: Record<string, unknown>, desc: DescMessage): string {
  if (typeof message.uid === "string") return message.uid;
  for (const field of desc.fields) {
    if (field.fieldKind !== "message") continue;
    const inner = message[field.localName] as { uid?: unknown } | undefined;
    if (typeof inner?.uid === "string") return inner.uid;
  }
  return "";
}

/**
 * The protocol a call came in with, as the request log names it. Its headers are read
 * without making the call's Headers (requestHeaderOf), and its URL's path is cut out of the
 * string: both were on every create, update and delete.
 */
function protocolOf(req: { readonly header: Headers }, url: string): string {
  const ct = requestHeaderOf(req, "content-type") ?? "";
  if (ct.startsWith("application/grpc-web")) return "grpc-web";
  if (ct.startsWith("application/grpc")) return "grpc";
  if (requestHeaderOf(req, "connect-protocol-version") || ct.startsWith("application/connect")) {
    return "connect";
  }
  return connectPath.test(pathOf(url)) ? "connect" : "rest";
}

const connectPath = /^\/[a-z0-9_.]+\.[A-Za-z0-9]+\/[A-Za-z0-9]+$/;

/**
 * The path of a call's URL as `new URL(url, "http://x").pathname` gives it to connectPath:
 * cut out of the string when the parser would move nothing in it (no dot segment, backslash,
 * tab or newline, and the path starts the URL or follows its `scheme://host`), parsed
 * otherwise. A character the parser would percent-encode is left as it is: neither it nor
 * its escape is one connectPath admits.
 */
function pathOf(url: string): string {
  let start = url.charCodeAt(0) === 0x2f ? 0 : -1;
  const scheme = start === 0 ? -1 : url.indexOf("://");
  if (scheme > 0) {
    // The host ends at the first "/", "?" or "#": a path only if it is a "/".
    const host = url.slice(scheme + 3).search(/[/?#]/);
    if (host >= 0 && url.charCodeAt(scheme + 3 + host) === 0x2f) start = scheme + 3 + host;
  }
  if (start >= 0) {
    const rest = url.slice(start).search(/[?#]/);
    const path = rest < 0 ? url.slice(start) : url.slice(start, start + rest);
    if (!/\/\.|\\|[\t\n\r]/.test(url) && !path.startsWith("//")) return path;
  }
  return new URL(url, "http://x").pathname;
}
