import {
  type Client,
  createClient,
  createRouterTransport,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { type AccessParts, createAccessParts } from "../../src/auth/access-parts.js";
import { storeRoles } from "../../src/auth/capabilities.js";
import { type Config, loadConfig } from "../../src/config.js";
import { createAuditInterceptor } from "../../src/events/audit-interceptor.js";
import { registerOnRouter } from "../../src/grpc/router-json.js";
import { noMetrics } from "../../src/metrics/metrics.js";
import { createRpcCalls, type RpcCalls } from "../../src/rpc-calls.js";
import type { ServiceName, ServiceTable } from "../../src/service-table.js";
import { serviceEntries } from "../../src/service-table.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { withHeaders } from "./connect-errors.js";
import type { IamClients } from "./iam-clients.js";
import { useForBlock } from "./late.js";
import { type TestOrgs, testOrgs } from "./test-orgs.js";
import type { V1Clients } from "./v1-clients.js";

// The API without a socket: the server's own implementations and interceptor chain
// (src/rpc-calls.ts: errors, deadline, rate limits, admission, access control, the NUL gate,
// the audit trail) and its access control (src/auth/access-parts.ts), on the real store,
// served through connect-es's in-memory router transport (Connect protocol, binary, no HTTP).
// For tests of handlers and policy; a test about a protocol (HTTP statuses, headers, REST
// transcoding, gRPC framing) belongs on a real listener (test-server.ts).

/** Typed clients of every service of the service table, by its name there (`groups`, `v1Groups`). */
export type ApiClients = { [N in ServiceName]: Client<ServiceTable[N]["service"]> };

/** Create a client of every service of the service table over `transport`. */
export function apiClients(transport: Transport): ApiClients {
  const clients: Partial<Record<ServiceName, unknown>> = {};
  for (const e of serviceEntries) clients[e.name] = createClient(e.service, transport);
  return clients as ApiClients;
}

/** The IAM clients (iam-clients.ts's set) among `api`. */
export function iamOf(api: ApiClients): IamClients {
  return {
    groups: api.groups,
    identities: api.identities,
    roles: api.roles,
    roleBindings: api.roleBindings,
    teams: api.teams,
    scim: api.scim,
    identityProviders: api.identityProviders,
    accountAssociations: api.accountAssociations,
    groupInvites: api.groupInvites,
    accessRequests: api.accessRequests,
  };
}

/** The v1 clients (v1-clients.ts's set) among `api`. */
export function v1Of(api: ApiClients): V1Clients {
  return {
    groups: api.v1Groups,
    identities: api.v1Identities,
    roles: api.v1Roles,
    roleBindings: api.v1RoleBindings,
    identityProviders: api.v1IdentityProviders,
    accountAssociations: api.v1AccountAssociations,
    groupInvites: api.v1GroupInvites,
    registry: api.v1Registry,
    advisories: api.v1Advisories,
  };
}

/** A store made for a server in memory, on its clock (role binding expiry is the store's). */
export type StoreFactory = (opts: { config: Config; now?: () => number }) => Store | Promise<Store>;

/** How startInMemory builds the API, besides its settings. */
export interface InMemoryOptions {
  /** The clock of the server and its store (token lifetimes, expiry); default Date.now. */
  now?: () => number;
  /** Interceptors after the audit trail's, as ServerDeps.interceptors. */
  interceptors?: Interceptor[];
  /** The store; default SQLite in memory (in-memory-backends.ts gives PostgreSQL's). */
  store?: StoreFactory;
}

/** The API served in memory, on its own store, with what a test makes callers with. */
export interface InMemoryServer extends TestOrgs {
  config: Config;
  store: Store;
  /** Access as the server built it: tokens, keys, decisions. */
  auth: AccessParts;
  /** A transport to the API sending `headers` (the bearer token) on every call. */
  transport(headers?: Record<string, string>): Transport;
  /** Clients of every service over transport(headers). */
  clients(headers?: Record<string, string>): ApiClients;
  /** A real token for an identity, signed by the server's issuer (aud: the base URL). */
  tokenFor(identityUid: string, aud?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Build the API in memory: settings are env-style overrides (as startTestServer's), on an
 * in-memory SQLite store unless `opts.store` makes another. Fails, as the server does, if an
 * RPC has no authorization rule.
 */
export async function startInMemory(
  env: Record<string, string> = {},
  opts: InMemoryOptions = {},
): Promise<InMemoryServer> {
  const config = loadConfig([], {
    GATEHOUSE_DB: ":memory:",
    GATEHOUSE_LOG_LEVEL: "silent",
    GATEHOUSE_DOMAIN: "gatehouse.test",
    GATEHOUSE_BASE_URL: "http://in-memory.test",
    ...env,
  });
  const now = opts.now ?? Date.now;
  const clock = opts.now ? { now: opts.now } : {};
  const store = opts.store
    ? await opts.store({ config, ...clock })
    : createSqliteStore(config.dbPath, { roles: storeRoles, ...clock });
  try {
    const quiet = () => undefined;
    const auth = await createAccessParts({
      config,
      store,
      now,
      metrics: noMetrics,
      logInfo: quiet,
      logWarn: quiet,
    });
    const calls = await createRpcCalls({
      config,
      store,
      now,
      auth,
      errorDomain: `iam.${config.domain}`,
      // An unexpected error is the test's to see: the caller gets a bare INTERNAL.
      logError: (msg, fields) => console.error(msg, fields),
      logInfo: quiet,
      // As the events plane gives them with the audit trail on, then a test's own.
      interceptors: [createAuditInterceptor(store), ...(opts.interceptors ?? [])],
    });
    // The server's router registration (its JSON options included), and its guard: an RPC
    // without an authorization rule stops it.
    const routes = (router: Parameters<typeof registerOnRouter>[0]) =>
      registerOnRouter(router, calls.services);
    let guarded = false;
    const interceptors = [admitting(calls), ...calls.interceptors];
    const transport = (headers: Record<string, string> = {}) =>
      createRouterTransport(
        (router) => {
          routes(router);
          if (!guarded) {
            auth.access.guard(router.handlers.map((h) => h.method));
            guarded = true;
          }
        },
        {
          // As the server's router: an unknown JSON field is INVALID_ARGUMENT.
          router: { interceptors, jsonOptions: { ignoreUnknownFields: false } },
          transport: { interceptors: [withHeaders(headers)] },
        },
      );
    transport();
    const tokenFor = async (uid: string, aud = config.baseUrl) =>
      (await auth.tokens.issue(uid, aud)).token;
    return {
      config,
      store,
      auth,
      transport,
      clients: (headers) => apiClients(transport(headers)),
      tokenFor,
      ...testOrgs(store, (uid) => tokenFor(uid)),
      close: () => store.close(),
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}

/**
 * Admission as every entry point of the server runs it before a call's body (the body gate's
 * hook, src/grpc/body-gate.ts): the token check and the admission checks; a refused call is
 * marked for admission's interceptor to refuse. (The body budget is the socket's, not here.)
 */
function admitting({ admission }: RpcCalls): Interceptor {
  return (next) => async (req) => {
    const admitted = await admission.admit({
      rpc: `${req.service.typeName}/${req.method.name}`,
      authorization: req.header.get("authorization"),
      requestId: "in-memory",
      values: req.contextValues,
      address: undefined,
    });
    if (admitted.refused) admission.refuseInChain(req.contextValues, admitted.refused);
    return next(req);
  };
}

/**
 * The API in memory for a file or a describe block: built in a beforeAll of the block this is
 * called in, closed in its afterAll (as useTestServer).
 */
export function useInMemory(
  env: Record<string, string> | (() => Record<string, string>) = {},
  opts: InMemoryOptions | (() => InMemoryOptions) = {},
): InMemoryServer {
  return useForBlock(
    () =>
      startInMemory(
        typeof env === "function" ? env() : env,
        typeof opts === "function" ? opts() : opts,
      ),
    "useInMemory(): the API is built in the block's beforeAll and closed in its afterAll",
  );
}
