import { fromBinary, isMessage, type toJson } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { GroupSchema, GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
} from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { errorDetailsRegistry } from "../../src/rest/error-body.js";
import { apiJson } from "./api-json.js";
import { type ApiErr, connectErr, withHeaders } from "./connect-errors.js";

// Socket-free, for in-memory tests too (helpers/in-memory.ts); kept here for existing imports.
export { type ApiErr, connectErr, withHeaders } from "./connect-errors.js";

/** A group as every protocol's answer is normalized to. */
export interface G {
  uid: string;
  name: string;
  description: string;
  verified: boolean;
}

/** A list page, normalized. */
export interface Page {
  groups: G[];
  nextPageToken: string;
  totalCount: string;
  skipped: number;
}

/** List parameters in their proto (camelCase JSON) form. */
export interface ListParams {
  pageSize?: number;
  pageToken?: string;
  orderBy?: string;
  skip?: number;
  name?: string;
  descendantsOf?: string;
  childrenOf?: string;
}

/** The Groups API seen through one protocol. */
export interface GroupsApi {
  create(parent: string, group: { name?: string; description?: string }): Promise<G>;
  get(uid: string): Promise<G>;
  list(p: ListParams): Promise<Page>;
  update(group: { uid: string; name?: string; description?: string }, mask?: string[]): Promise<G>;
  delete(uid: string): Promise<void>;
}

/** Run `fn` and return its normalized API error; fail if it succeeds. */
export async function apiError(fn: () => Promise<unknown>): Promise<ApiErr> {
  try {
    await fn();
  } catch (e) {
    if (isApiErr(e)) return e;
    throw e;
  }
  throw new Error("expected the call to fail");
}

function isApiErr(e: unknown): e is ApiErr {
  return typeof e === "object" && e !== null && "reason" in e && "code" in e;
}

const norm = (g: Record<string, unknown>): G => ({
  uid: String(g.uid ?? ""),
  name: String(g.name ?? ""),
  description: String(g.description ?? ""),
  verified: Boolean(g.verified),
});

/** REST with fetch. */
export function restGroups(baseUrl: string, headers: Record<string, string> = {}): GroupsApi {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(baseUrl + path, {
      method,
      headers: {
        ...headers,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw restErr(json);
    return json;
  };
  return {
    create: async (parent, group) =>
      norm(await call("POST", `/iam/v2beta1/groups${parent ? `/${parent}` : ""}`, group)),
    get: async (uid) => norm(await call("GET", `/iam/v2beta1/groups/${uid}`)),
    async list(p) {
      const q = new URLSearchParams();
      if (p.pageSize !== undefined) q.set("page_size", String(p.pageSize));
      if (p.pageToken) q.set("page_token", p.pageToken);
      if (p.orderBy) q.set("order_by", p.orderBy);
      if (p.skip !== undefined) q.set("skip", String(p.skip));
      if (p.name) q.set("name", p.name);
      if (p.descendantsOf) q.set("uidp.descendants_of", p.descendantsOf);
      if (p.childrenOf) q.set("uidp.childrenOf", p.childrenOf);
      const json = await call("GET", `/iam/v2beta1/groups?${q}`);
      return {
        groups: (json.groups as Record<string, unknown>[]).map(norm),
        nextPageToken: String(json.nextPageToken ?? ""),
        totalCount: json.totalCount as string,
        skipped: json.skipped as number,
      };
    },
    async update(group, mask) {
      const { uid, ...body } = group;
      const q = mask ? `?updateMask=${mask.join(",")}` : "";
      return norm(await call("PATCH", `/iam/v2beta1/groups/${uid}${q}`, body));
    },
    async delete(uid) {
      await call("DELETE", `/iam/v2beta1/groups/${uid}`);
    },
  };
}

/** Normalize a REST error body. */
export function restErr(json: Record<string, unknown>): ApiErr {
  const details = (json.details ?? []) as Record<string, unknown>[];
  const info = details[0] ?? {};
  const bad = details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest");
  const pre = details.find(
    (d) => d["@type"] === "type.googleapis.com/google.rpc.PreconditionFailure",
  );
  return {
    code: json.code as number,
    message: json.message as string,
    reason: info["@type"] === "type.googleapis.com/google.rpc.ErrorInfo" ? String(info.reason) : "",
    domain: String(info.domain ?? ""),
    fields: ((bad?.fieldViolations ?? []) as { field: string }[]).map((v) => v.field),
    preconditions: ((pre?.violations ?? []) as { type: string }[]).map((v) => v.type),
  };
}

/** Any connect-node transport: Connect, gRPC-Web or gRPC. */
export function connectGroups(transport: Transport): GroupsApi {
  const client: Client<typeof GroupsService> = createClient(GroupsService, transport);
  const wrap = async <T>(p: Promise<T>): Promise<T> => {
    try {
      return await p;
    } catch (e) {
      throw connectErr(e);
    }
  };
  const g = (m: Parameters<typeof toJson<typeof GroupSchema>>[1]) =>
    norm(apiJson(GroupSchema, m as never) as Record<string, unknown>);
  return {
    create: async (parent, group) => g(await wrap(client.createGroup({ parent, group }))),
    get: async (uid) => g(await wrap(client.getGroup({ uid }))),
    async list(p) {
      const res = await wrap(
        client.listGroups({
          pageSize: p.pageSize ?? 0,
          pageToken: p.pageToken ?? "",
          orderBy: p.orderBy ?? "",
          skip: p.skip ?? 0,
          name: p.name ?? "",
          uidp: { descendantsOf: p.descendantsOf ?? "", childrenOf: p.childrenOf ?? "" },
        }),
      );
      return {
        groups: res.groups.map(g),
        nextPageToken: res.nextPageToken ?? "",
        totalCount: String(res.totalCount),
        skipped: res.skipped,
      };
    },
    update: async (group, mask) =>
      g(
        await wrap(client.updateGroup({ group, ...(mask ? { updateMask: { paths: mask } } : {}) })),
      ),
    async delete(uid) {
      await wrap(client.deleteGroup({ uid }));
    },
  };
}

/** The connect-node transports of a server, sending `headers` on every call. */
export function connectTransports(baseUrl: string, headers: Record<string, string> = {}) {
  const interceptors = [withHeaders(headers)];
  return {
    connect: createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors }),
    grpcWeb: createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors }),
    grpc: createGrpcTransport({ baseUrl, interceptors }),
  };
}

/** grpc-js metadata holding `headers`. */
export function grpcMetadata(headers: Record<string, string>): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(headers)) md.set(k, v);
  return md;
}

/** grpc-js with stubs loaded from proto/ by @grpc/proto-loader, sending `headers` as metadata. */
export function grpcJsGroups(
  port: number,
  headers: Record<string, string> = {},
): GroupsApi & { close(): void } {
  const def = protoLoader.loadSync("gatehouse/iam/v2beta1/groups.proto", {
    includeDirs: ["proto", "node_modules/google-proto-files"],
    keepCase: false,
    longs: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    gatehouse: { iam: { v2beta1: { GroupsService: grpc.ServiceClientConstructor } } };
  };
  const client = new pkg.gatehouse.iam.v2beta1.GroupsService(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  ) as unknown as Record<
    string,
    (
      req: unknown,
      md: grpc.Metadata,
      cb: (err: grpc.ServiceError | null, res: Record<string, unknown>) => void,
    ) => void
  >;
  const call = (method: string, req: unknown) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      client[method]!.call(client, req, grpcMetadata(headers), (err, res) =>
        err ? reject(grpcErr(err)) : resolve(res),
      );
    });
  return {
    create: async (parent, group) => norm(await call("createGroup", { parent, group })),
    get: async (uid) => norm(await call("getGroup", { uid })),
    async list(p) {
      const res = await call("listGroups", {
        pageSize: p.pageSize ?? 0,
        pageToken: p.pageToken ?? "",
        orderBy: p.orderBy ?? "",
        skip: p.skip ?? 0,
        name: p.name ?? "",
        uidp: { descendantsOf: p.descendantsOf ?? "", childrenOf: p.childrenOf ?? "" },
      });
      return {
        groups: (res.groups as Record<string, unknown>[]).map(norm),
        nextPageToken: String(res.nextPageToken ?? ""),
        totalCount: String(res.totalCount),
        skipped: res.skipped as number,
      };
    },
    update: async (group, mask) =>
      norm(await call("updateGroup", { group, ...(mask ? { updateMask: { paths: mask } } : {}) })),
    async delete(uid) {
      await call("deleteGroup", { uid });
    },
    close: () => (client as unknown as grpc.Client).close(),
  };
}

/** Normalize a grpc-js error. */
export function grpcErr(err: grpc.ServiceError): ApiErr {
  const bin = err.metadata.get("grpc-status-details-bin")[0];
  const status = bin ? fromBinary(StatusSchema, bin as Buffer) : undefined;
  const details = (status?.details ?? []).map((a) => anyUnpack(a, errorDetailsRegistry));
  const info = details[0];
  const find = <T>(typeName: string) =>
    details.filter((d) => d?.$typeName === typeName) as unknown as T[];
  return {
    code: err.code,
    message: err.details,
    reason: isMessage(info, ErrorInfoSchema) ? info.reason : "",
    domain: isMessage(info, ErrorInfoSchema) ? info.domain : "",
    fields: find<{ fieldViolations: { field: string }[] }>(BadRequestSchema.typeName).flatMap((b) =>
      b.fieldViolations.map((v) => v.field),
    ),
    preconditions: find<{ violations: { type: string }[] }>(
      PreconditionFailureSchema.typeName,
    ).flatMap((p) => p.violations.map((v) => v.type)),
  };
}
