import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { providerPersonUid } from "../auth/login/person.js";
import { changeScope } from "../events/audit-scope.js";
import type { ScimUserRecord, ScimUserWrite } from "../store/scim-store.js";
import { type Store, StoreError } from "../store/store.js";
import { isUid, newChildUid } from "../uid.js";
import { badRequest, errorBody, ScimError } from "./scim-error.js";
import { type CheckedFilter, equalityOf, parseFilter } from "./scim-filter.js";
import { groupDoc, groupResource, groupWrite, renderGroup } from "./scim-groups.js";
import { applyPatch } from "./scim-patch.js";
import { type Doc, requireSchemas } from "./scim-resource.js";
import {
  commonAttributes,
  enterpriseAttributes,
  enterpriseSchema,
  groupAttributes,
  groupSchema,
  listSchema,
  schemaResource,
  userAttributes,
  userSchema,
} from "./scim-schemas.js";
import { hashScimToken, scimBaseUrl } from "./scim-token.js";
import { etagOf, renderUser, userResource, userWrite } from "./scim-users.js";

/** Options of scimRoutes. */
export interface ScimRoutesOptions {
  store: Store;
  /** The server's base URL: an organization's SCIM base is `{baseUrl}/scim/v2/<org uid>`. */
  baseUrl: string;
  now: () => number;
  /** The largest request body taken (413 past it). */
  bodyLimit: number;
  log: {
    info(fields: object, msg: string): void;
    error(fields: object, msg: string): void;
  };
}

/** The content type of every SCIM answer (RFC 7644 section 3.1). */
export const scimContentType = "application/scim+json; charset=utf-8";

/** The most resources one list answer holds (a larger `count` is cut to it). */
export const maxCount = 1000;
/** The most users a filter that no index narrows is applied to. */
export const maxScan = 50_000;

/** How long a connection's use time may lag: it is written at most this often. */
const useTimeStepMs = 60_000;

// The organization a request's SCIM token was checked for.
const kOrg = Symbol("scim organization");
type Checked = FastifyRequest & { [kOrg]?: string };

/**
 * Serve SCIM 2.0 (RFC 7644) for every organization that has a SCIM connection, under
 * `/scim/v2/<org uid>` (the caller's prefix): discovery (ServiceProviderConfig, ResourceTypes,
 * Schemas) and Users. Every request needs the organization's own bearer token, checked before
 * its body is read; another organization's token, an unknown one, or a Gatehouse API token
 * is a 401 that says nothing of what exists. Every refusal is a SCIM error body.
 */
export const scimRoutes: FastifyPluginAsync<ScimRoutesOptions> = async (app, opts) => {
  const { store, now } = opts;
  const lastTouch = new Map<string, number>();

  // Bodies are JSON (SCIM's own type, or plain JSON as some clients send), bounded.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    ["application/scim+json", "application/json"],
    { parseAs: "string", bodyLimit: opts.bodyLimit },
    (_req, body, done) => {
      try {
        done(null, JSON.parse(body as string));
      } catch {
        done(badRequest("invalidSyntax", "the body is not JSON"), undefined);
      }
    },
  );

  app.addHook("onRequest", async (req) => {
    const org = orgOf(req);
    const header = req.headers.authorization;
    const m = typeof header === "string" ? /^Bearer +(\S+) *$/i.exec(header) : null;
    const connection = m?.[1] ? await store.findScimConnection(hashScimToken(m[1])) : undefined;
    // One answer for no token, a wrong token and another organization's token: a caller
    // learns nothing of which organizations exist or have a connection.
    if (!connection || connection.orgUid !== org || !(await store.getGroup(org))) {
      opts.log.info(
        { reqId: req.id, reason: connection ? "other_org" : "bad_token" },
        "SCIM token refused",
      );
      throw new ScimError(401, "a valid SCIM bearer token of this organization is required");
    }
    (req as Checked)[kOrg] = org;
    const t = now();
    if ((lastTouch.get(org) ?? 0) + useTimeStepMs <= t) {
      lastTouch.set(org, t);
      await store.touchScimConnection(org, t);
    }
  });

  app.setErrorHandler(async (err, req, reply) => {
    const scim = toScimError(err);
    if (scim.status >= 500) opts.log.error({ reqId: req.id, err }, "SCIM request failed");
    if (scim.status === 401) reply.header("www-authenticate", 'Bearer realm="scim"');
    return send(reply, scim.status, errorBody(scim));
  });
  // Every other path under the prefix is SCIM's 404 (after the token check), not the REST
  // gateway's: its catch-all would otherwise answer it.
  const nowhere = async () => {
    throw new ScimError(404, "no such SCIM endpoint");
  };
  app.setNotFoundHandler(nowhere);
  app.all("/*", nowhere);

  const base = (req: FastifyRequest) => scimBaseUrl(opts.baseUrl, org(req));
  const scope = (req: FastifyRequest, type: string) =>
    changeScope({
      type: `dev.gatehouse.scim.${type}.v1`,
      source: `/scim/v2/${org(req)}`,
      requestId: req.id,
      operator: "the organization's SCIM connection",
      subjectUid: org(req),
    });
  // The uids an externalId gives as the subject of each of the organization's providers.
  const personUidsOf = async (orgUid: string, externalId: string): Promise<string[]> => {
    if (externalId === "") return [];
    const providers = await store.listIdentityProviders({
      scope: [orgUid],
      filters: {},
      order: { field: "uid", desc: false },
      skip: 0,
      limit: 100,
    });
    return providers.items.map((p) => providerPersonUid(p.uid, p.oidc.issuer, externalId));
  };
  const writeOf = async (req: FastifyRequest, id: string, doc: Doc): Promise<ScimUserWrite> => {
    const w = userWrite(org(req), id, doc, now());
    return { ...w, personUids: await personUidsOf(w.orgUid, w.externalId) };
  };
  const groupsOf = async (req: FastifyRequest, user: ScimUserRecord) =>
    (await store.scimGroupsOfUser(org(req), user.id)).map((g) => ({
      value: g.id,
      display: g.name,
    }));
  const groupOr404 = async (req: FastifyRequest, id: string) => {
    const group = isUid(`${org(req)}/${id}`) ? await store.getScimGroup(org(req), id) : undefined;
    if (!group) throw new ScimError(404, `no Group ${JSON.stringify(id)}`);
    return group;
  };
  const userOr404 = async (req: FastifyRequest, id: string) => {
    const user = await store.getScimUser(org(req), id);
    if (!user) throw new ScimError(404, `no User ${JSON.stringify(id)}`);
    return user;
  };

  app.get("/:org/ServiceProviderConfig", async (req, reply) =>
    send(reply, 200, serviceProviderConfig(base(req))),
  );
  // totalResults is how many there are (RFC 7644 3.4.2): all of them, on one page.
  app.get("/:org/ResourceTypes", async (req, reply) => {
    const all = resourceTypes(base(req));
    return send(reply, 200, listOf(all, 1, all.length));
  });
  app.get<{ Params: { id: string } }>("/:org/ResourceTypes/:id", async (req, reply) => {
    const found = resourceTypes(base(req)).find((r) => r.id === req.params.id);
    if (!found) throw new ScimError(404, `no ResourceType ${JSON.stringify(req.params.id)}`);
    return send(reply, 200, found);
  });
  app.get("/:org/Schemas", async (req, reply) => {
    const all = schemas(base(req));
    return send(reply, 200, listOf(all, 1, all.length));
  });
  app.get<{ Params: { id: string } }>("/:org/Schemas/:id", async (req, reply) => {
    const found = schemas(base(req)).find((s) => s.id === req.params.id);
    if (!found) throw new ScimError(404, `no Schema ${JSON.stringify(req.params.id)}`);
    return send(reply, 200, found);
  });

  const searchUsers = async (req: FastifyRequest, reply: FastifyReply, q: Query) => {
    const page = pageOf(q);
    const filter =
      typeof q.filter === "string" && q.filter.trim() !== ""
        ? parseFilter(q.filter, userResource)
        : undefined;
    const { total, users } = await listUsers(store, org(req), filter, page, base(req));
    const shown = users.map((u) => project(renderUser(u, base(req)), q));
    return send(reply, 200, listOf(shown, page.startIndex, total));
  };
  app.get<{ Querystring: Query }>("/:org/Users", (req, reply) =>
    searchUsers(req, reply, req.query),
  );
  // A query in a body (RFC 7644 3.4.3), as some clients send one too long for a URL.
  app.post<{ Body: unknown }>("/:org/Users/.search", (req, reply) =>
    searchUsers(req, reply, searchQuery(req.body)),
  );

  app.post<{ Body: unknown }>("/:org/Users", async (req, reply) => {
    const body = objectBody(req.body);
    requireSchemas(body, userSchema);
    const write = await writeOf(req, randomUUID(), body);
    const user = await store.recording(scope(req, "user.created")).createScimUser(write);
    const shown = renderUser(user, base(req));
    reply.header("location", (shown.meta as Doc).location as string);
    return send(reply, 201, shown, etagOf(user.version));
  });

  app.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>(
    "/:org/Users/:id",
    async (req, reply) => {
      const user = await userOr404(req, req.params.id);
      const shown = renderUser(user, base(req), await groupsOf(req, user));
      return send(reply, 200, project(shown, req.query), etagOf(user.version));
    },
  );

  app.put<{ Params: { id: string }; Body: unknown }>("/:org/Users/:id", async (req, reply) => {
    const body = objectBody(req.body);
    requireSchemas(body, userSchema);
    const current = await userOr404(req, req.params.id);
    const expect = expectedVersion(req, current);
    const write = await writeOf(req, current.id, body);
    const user = await store
      .recording(scope(req, changeType(current, write.active)))
      .replaceScimUser(write, expect);
    const shown = renderUser(user, base(req), await groupsOf(req, user));
    return send(reply, 200, shown, etagOf(user.version));
  });

  app.patch<{ Params: { id: string }; Body: unknown }>("/:org/Users/:id", async (req, reply) => {
    const current = await userOr404(req, req.params.id);
    const expect = expectedVersion(req, current);
    const doc = applyPatch(
      { ...current.attributes, active: current.active },
      req.body,
      userResource,
    );
    const write = await writeOf(req, current.id, doc);
    const user = await store
      .recording(scope(req, changeType(current, write.active)))
      .replaceScimUser(write, expect);
    const shown = renderUser(user, base(req), await groupsOf(req, user));
    return send(reply, 200, shown, etagOf(user.version));
  });

  app.delete<{ Params: { id: string } }>("/:org/Users/:id", async (req, reply) => {
    const current = await userOr404(req, req.params.id);
    expectedVersion(req, current);
    const personUids = await personUidsOf(org(req), current.externalId);
    await store
      .recording(scope(req, "user.deleted"))
      .deleteScimUser(org(req), current.id, now(), personUids);
    return reply.code(204).send();
  });

  const searchGroups = async (req: FastifyRequest, reply: FastifyReply, q: Query) => {
    const page = pageOf(q);
    const filter =
      typeof q.filter === "string" && q.filter.trim() !== ""
        ? parseFilter(q.filter, groupResource)
        : undefined;
    const eq = filter && equalityOf(filter.ast, ["displayName", "externalId"]);
    const narrow = eq
      ? { by: eq.attr as "displayName" | "externalId", value: eq.value }
      : { by: "all" as const };
    let total: number;
    let shown: Doc[];
    if (!filter) {
      total = await store.countScimGroups(org(req), narrow);
      const groups =
        page.count === 0
          ? []
          : await store.listScimGroups(org(req), narrow, page.count, page.startIndex - 1);
      shown = groups.map((g) => renderGroup(g, base(req)));
    } else {
      const candidates = await store.listScimGroups(org(req), narrow, maxScan + 1, 0);
      if (candidates.length > maxScan) {
        throw badRequest("tooMany", `the filter would be applied to more than ${maxScan} groups`);
      }
      const matched = candidates
        .map((g) => renderGroup(g, base(req)))
        .filter((g) => filter.matches(g));
      total = matched.length;
      shown = matched.slice(page.startIndex - 1, page.startIndex - 1 + page.count);
    }
    return send(
      reply,
      200,
      listOf(
        shown.map((g) => project(g, q)),
        page.startIndex,
        total,
      ),
    );
  };
  app.get<{ Querystring: Query }>("/:org/Groups", (req, reply) =>
    searchGroups(req, reply, req.query),
  );
  app.post<{ Body: unknown }>("/:org/Groups/.search", (req, reply) =>
    searchGroups(req, reply, searchQuery(req.body)),
  );

  // A search from the root (RFC 7644 3.4.3): Users, then Groups, each filtered by its own
  // schema; a filter naming an attribute one type lacks matches none of that type.
  app.post<{ Body: unknown }>("/:org/.search", async (req, reply) => {
    const q = searchQuery(req.body);
    const page = pageOf(q);
    const text = typeof q.filter === "string" && q.filter.trim() !== "" ? q.filter : undefined;
    const filterOf = (schema: typeof userResource) => {
      if (text === undefined) return undefined;
      try {
        return parseFilter(text, schema);
      } catch (err) {
        if (err instanceof ScimError && err.scimType === "invalidFilter") return null;
        throw err;
      }
    };
    const users = filterOf(userResource);
    const groups = filterOf(groupResource);
    // Neither type takes it: the filter's own fault, as the Users endpoint words it.
    if (users === null && groups === null) parseFilter(text!, userResource);
    const found: Doc[] = [];
    if (users !== null) {
      const all = await store.listScimUsers(org(req), { by: "all" }, maxScan + 1, 0);
      found.push(
        ...all.map((u) => renderUser(u, base(req))).filter((u) => !users || users.matches(u)),
      );
    }
    if (groups !== null) {
      const all = await store.listScimGroups(org(req), { by: "all" }, maxScan + 1, 0);
      found.push(
        ...all.map((g) => renderGroup(g, base(req))).filter((g) => !groups || groups.matches(g)),
      );
    }
    if (found.length > maxScan) {
      throw badRequest("tooMany", `a search from the root finds more than ${maxScan} resources`);
    }
    const shown = found.slice(page.startIndex - 1, page.startIndex - 1 + page.count);
    return send(
      reply,
      200,
      listOf(
        shown.map((r) => project(r, q)),
        page.startIndex,
        found.length,
      ),
    );
  });

  app.post<{ Body: unknown }>("/:org/Groups", async (req, reply) => {
    const body = objectBody(req.body);
    requireSchemas(body, groupSchema);
    const id = newChildUid(org(req)).slice(org(req).length + 1);
    const write = groupWrite(org(req), id, body, now());
    const group = await store
      .recording(scope(req, "group.created"))
      .createScimGroup(write)
      .catch(memberNotFound);
    const shown = renderGroup(group, base(req));
    reply.header("location", (shown.meta as Doc).location as string);
    return send(reply, 201, shown, etagOf(group.version));
  });

  app.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>(
    "/:org/Groups/:id",
    async (req, reply) => {
      const group = await groupOr404(req, req.params.id);
      const shown = project(renderGroup(group, base(req)), req.query);
      return send(reply, 200, shown, etagOf(group.version));
    },
  );

  app.put<{ Params: { id: string }; Body: unknown }>("/:org/Groups/:id", async (req, reply) => {
    const body = objectBody(req.body);
    requireSchemas(body, groupSchema);
    const current = await groupOr404(req, req.params.id);
    const expect = expectedVersion(req, current);
    const write = groupWrite(org(req), current.id, body, now());
    const group = await store
      .recording(scope(req, "group.updated"))
      .replaceScimGroup(write, expect)
      .catch(memberNotFound);
    return send(reply, 200, renderGroup(group, base(req)), etagOf(group.version));
  });

  app.patch<{ Params: { id: string }; Body: unknown }>("/:org/Groups/:id", async (req, reply) => {
    const current = await groupOr404(req, req.params.id);
    const expect = expectedVersion(req, current);
    const doc = applyPatch(groupDoc(current), req.body, groupResource);
    const write = groupWrite(org(req), current.id, doc, now());
    const group = await store
      .recording(scope(req, "group.updated"))
      .replaceScimGroup(write, expect)
      .catch(memberNotFound);
    return send(reply, 200, renderGroup(group, base(req)), etagOf(group.version));
  });

  app.delete<{ Params: { id: string } }>("/:org/Groups/:id", async (req, reply) => {
    const current = await groupOr404(req, req.params.id);
    expectedVersion(req, current);
    await store.recording(scope(req, "group.deleted")).deleteScimGroup(org(req), current.id);
    return reply.code(204).send();
  });
};

/** A list request's parameters, as a query string gives them. */
type Query = Record<string, unknown>;

/** The URN of a query sent in a body (RFC 7644 3.4.3). */
const searchRequestSchema = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

/**
 * A SearchRequest body (RFC 7644 3.4.3) as the query parameters of a GET: `attributes` and
 * `excludedAttributes` are lists there, `startIndex` and `count` numbers.
 */
function searchQuery(body: unknown): Query {
  const b = objectBody(body);
  requireSchemas(b, searchRequestSchema);
  const q: Query = {};
  for (const [key, value] of Object.entries(b)) {
    const name = ["filter", "attributes", "excludedAttributes", "startIndex", "count"].find(
      (n) => n.toLowerCase() === key.toLowerCase(),
    );
    if (!name || value === undefined || value === null) continue;
    if (name === "attributes" || name === "excludedAttributes") {
      if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
        throw badRequest("invalidValue", `${name} must be a list of attribute names`);
      }
      q[name] = value.join(",");
    } else if (name === "filter") {
      if (typeof value !== "string") throw badRequest("invalidFilter", "filter must be a string");
      q[name] = value;
    } else {
      if (typeof value !== "number" || !Number.isInteger(value)) {
        throw badRequest("invalidValue", `${name} must be an integer`);
      }
      q[name] = String(value);
    }
  }
  return q;
}

/** A member that is no User of the organization: the body's mistake (400), not a 404. */
function memberNotFound(err: unknown): never {
  if (err instanceof StoreError && err.kind === "not_found" && err.message.includes("scim user")) {
    throw badRequest("invalidValue", "a member is not a User of this organization");
  }
  throw err;
}

/** The organization a checked request is for. */
function org(req: FastifyRequest): string {
  const o = (req as Checked)[kOrg];
  if (o === undefined)
    throw new ScimError(401, "a valid SCIM bearer token of this organization is required");
  return o;
}

/** The organization uid in a SCIM path (`…/scim/v2/<org>/…`), or "". */
function orgOf(req: FastifyRequest): string {
  const fromRoute = (req.params as { org?: unknown } | undefined)?.org;
  if (typeof fromRoute === "string") return isUid(fromRoute) ? fromRoute : "";
  const path = req.url.split("?")[0] ?? "";
  const m = /\/scim\/v2\/([^/]+)/.exec(path);
  return m?.[1] && isUid(m[1]) ? m[1] : "";
}

// An update's event type: a user made inactive is deprovisioned (its own type, for the trail).
function changeType(current: ScimUserRecord, active: boolean): string {
  if (current.active && !active) return "user.deprovisioned";
  if (!current.active && active) return "user.reactivated";
  return "user.updated";
}

function send(reply: FastifyReply, status: number, body: unknown, etag?: string) {
  reply.code(status).header("content-type", scimContentType).header("cache-control", "no-store");
  if (etag) reply.header("etag", etag);
  return reply.send(JSON.stringify(body));
}

function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw badRequest("invalidSyntax", "the body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

/** The version an If-Match header asks for (RFC 7644 3.14), refusing a stale one (412). */
function expectedVersion(req: FastifyRequest, current: { version: number }): number | undefined {
  const header = req.headers["if-match"];
  if (typeof header !== "string" || header.trim() === "*") return undefined;
  const wanted = header.split(",").map((t) => t.trim().replace(/^W\//, ""));
  if (!wanted.includes(`"${current.version}"`)) {
    throw new ScimError(412, "the resource has changed since that version");
  }
  return current.version;
}

/** startIndex and count (RFC 7644 3.4.2.4): 1-based, bounded; a count of 0 asks for a total. */
function pageOf(q: Record<string, unknown>): { startIndex: number; count: number } {
  const int = (name: string, fallback: number) => {
    const v = q[name];
    if (v === undefined || v === "") return fallback;
    if (typeof v !== "string" || !/^-?\d{1,9}$/.test(v.trim())) {
      throw badRequest("invalidValue", `${name} must be an integer`);
    }
    return Number(v);
  };
  const startIndex = Math.max(1, int("startIndex", 1));
  const count = Math.min(maxCount, Math.max(0, int("count", 100)));
  return { startIndex, count };
}

async function listUsers(
  store: Store,
  orgUid: string,
  filter: CheckedFilter | undefined,
  page: { startIndex: number; count: number },
  base: string,
): Promise<{ total: number; users: ScimUserRecord[] }> {
  const eq = filter && equalityOf(filter.ast, ["userName", "externalId"]);
  const narrow = eq
    ? { by: eq.attr as "userName" | "externalId", value: eq.value }
    : { by: "all" as const };
  if (!filter) {
    const total = await store.countScimUsers(orgUid, narrow);
    const users =
      page.count === 0
        ? []
        : await store.listScimUsers(orgUid, narrow, page.count, page.startIndex - 1);
    return { total, users };
  }
  const candidates = await store.listScimUsers(orgUid, narrow, maxScan + 1, 0);
  if (candidates.length > maxScan) {
    throw badRequest(
      "tooMany",
      `the filter would be applied to more than ${maxScan} users: narrow it with userName eq or externalId eq`,
    );
  }
  const matched = candidates.filter((u) => filter.matches(renderUser(u, base)));
  return {
    total: matched.length,
    users: matched.slice(page.startIndex - 1, page.startIndex - 1 + page.count),
  };
}

function listOf(resources: readonly unknown[], startIndex: number, total: number) {
  return {
    schemas: [listSchema],
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

/**
 * The attributes a client asked for (`attributes`) or left out (`excludedAttributes`), at
 * the top level; id, schemas and meta are always returned.
 */
function project(resource: Doc, q: Record<string, unknown>): Doc {
  const names = (v: unknown) =>
    typeof v === "string" && v.trim() !== ""
      ? v.split(",").map((n) => n.trim().split(".")[0]!.toLowerCase())
      : undefined;
  const only = names(q.attributes);
  const except = names(q.excludedAttributes);
  if (!only && !except) return resource;
  const always = new Set(["id", "schemas", "meta"]);
  const out: Doc = {};
  for (const [k, v] of Object.entries(resource)) {
    const lower = k.toLowerCase();
    if (always.has(lower) || ((!only || only.includes(lower)) && !except?.includes(lower))) {
      out[k] = v;
    }
  }
  return out;
}

/** A thrown error as a SCIM error: the store's kinds mapped, anything unexpected a 500. */
function toScimError(err: unknown): ScimError {
  if (err instanceof ScimError) return err;
  if (err instanceof StoreError) {
    switch (err.kind) {
      case "already_exists":
        return new ScimError(409, err.message, "uniqueness");
      case "not_found":
        return new ScimError(404, err.message);
      case "conflict":
        return new ScimError(412, err.message);
      case "failed_precondition":
        return new ScimError(409, err.message);
      case "invalid_text":
        return new ScimError(400, err.message, "invalidValue");
      case "unavailable":
      case "storage_full":
        return new ScimError(503, "the database is unavailable; retry later");
      default:
        return new ScimError(500, "internal error");
    }
  }
  const status = (err as { statusCode?: unknown }).statusCode;
  if (status === 413) return new ScimError(413, "the request body is too large");
  if (status === 415) {
    return new ScimError(415, "the body must be application/scim+json or application/json");
  }
  if (typeof status === "number" && status >= 400 && status < 500) {
    return new ScimError(400, "the request is malformed", "invalidSyntax");
  }
  return new ScimError(500, "internal error");
}

function serviceProviderConfig(base: string) {
  return {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
    documentationUri: "https://github.com/gatehouse/gatehouse/blob/main/docs/scim.md",
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: maxCount },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: "oauthbearertoken",
        name: "Bearer token",
        description:
          "The organization's SCIM token (gatehouse scim token create), in Authorization: Bearer",
        primary: true,
      },
    ],
    meta: { resourceType: "ServiceProviderConfig", location: `${base}/ServiceProviderConfig` },
  };
}

function resourceTypes(base: string) {
  return [
    {
      schemas: ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
      id: "User",
      name: "User",
      endpoint: "/Users",
      description: "A person of the organization",
      schema: userSchema,
      schemaExtensions: [{ schema: enterpriseSchema, required: false }],
      meta: { resourceType: "ResourceType", location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
      id: "Group",
      name: "Group",
      endpoint: "/Groups",
      description: "A team of the organization",
      schema: groupSchema,
      meta: { resourceType: "ResourceType", location: `${base}/ResourceTypes/Group` },
    },
  ];
}

function schemas(base: string) {
  return [
    schemaResource(
      userSchema,
      "User",
      "A person of the organization",
      [...commonAttributes, ...userAttributes],
      base,
    ),
    schemaResource(
      enterpriseSchema,
      "EnterpriseUser",
      "Enterprise attributes of a person",
      enterpriseAttributes,
      base,
    ),
    schemaResource(
      groupSchema,
      "Group",
      "A team of the organization",
      [...commonAttributes, ...groupAttributes],
      base,
    ),
  ];
}
