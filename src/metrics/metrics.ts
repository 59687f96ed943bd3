import type { DescService } from "@bufbuild/protobuf";
import {
  Counter,
  type CounterConfiguration,
  collectDefaultMetrics,
  Histogram,
  type LabelValues,
  Registry,
} from "prom-client";
import type { DecisionOutcome } from "../auth/access-interceptor.js";
import { codeName } from "../errors.js";

/** The protocols a call arrives over. */
export const protocols = ["grpc", "grpc-web", "connect", "rest"] as const;
/** One of `protocols`. */
export type Protocol = (typeof protocols)[number];

/** What a token endpoint did with a request: issued a token, refused it, or failed. */
export type TokenOutcome = "issued" | "refused" | "error";
/** The endpoints that issue tokens. `registry_token` is for the registry token endpoint. */
export type TokenKind = "sts_exchange" | "login" | "registry_token";

/** The label value of every RPC path that is not one the server serves. */
export const unknownLabel = "unknown";

/**
 * Metrics records what Prometheus scrapes. Every method is cheap and never throws; label
 * values come from fixed vocabularies (served descriptors, code names, outcomes), never from
 * what a client sent, so the number of series is bounded whatever the traffic.
 */
export interface Metrics {
  /** The registry to expose, or undefined when metrics are off. */
  readonly registry: Registry | undefined;
  /**
   * One finished call: `rpc` is `package.Service/Method` (anything not served counts as
   * `unknown`), `code` the gRPC code it ended with, as a number (0: OK) or its name as
   * codeName() gives it (`NOT_FOUND`); undefined or anything else: not recorded.
   */
  rpc(
    rpc: string | undefined,
    protocol: Protocol,
    code: number | string | undefined,
    seconds: number,
  ): void;
  /** One authorization decision about a non-public RPC. */
  authorization(outcome: DecisionOutcome): void;
  /** One request to a token endpoint, by outcome. */
  token(kind: TokenKind, outcome: TokenOutcome): void;
  /** One store operation (a Store method name) and how long it took. */
  storeOperation(operation: string, seconds: number): void;
}

/** Metrics that record nothing: the server's when GATEHOUSE_METRICS_PORT is empty. */
export const noMetrics: Metrics = {
  registry: undefined,
  rpc() {},
  authorization() {},
  token() {},
  storeOperation() {},
};

/** Options of createMetrics. */
export interface MetricsOptions {
  /** The services served: their methods are the only service/method label values. */
  services: readonly DescService[];
  /** The store's method names, the only `operation` label values. */
  storeOperations?: readonly string[];
  /**
   * RPCs that issue tokens (`package.Service/Method` to kind): each call also counts as a
   * token request, issued (OK), refused (a client's mistake or a refusal) or error.
   */
  tokenRpcs?: Readonly<Record<string, TokenKind>>;
  /** Read at scrape time: the access cache's hit and miss counts so far. */
  accessCache?: () => { hits: number; misses: number };
  /** Also collect prom-client's process and event-loop metrics (default true). */
  defaultMetrics?: boolean;
}

// Latency buckets in seconds: 0.5 ms to 5 s, where an IAM call's answers fall.
const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

// gRPC's codes 0..16, and one more slot for "not recorded".
const codeCount = 18;
const notRecorded = 17;

/** The children of one (service, method, protocol): one pair per code, made on first use. */
type CodeSlots = ({ count: Counter.Internal; latency: Histogram.Internal<string> } | undefined)[];

/**
 * Create the metrics of one server on a registry of its own (never prom-client's global one,
 * so that two servers in one process, as in tests, do not mix).
 */
export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const counter = <T extends string>(c: CounterConfiguration<T>) =>
    new Counter({ ...c, registers: [registry] });

  const rpcLabels = ["service", "method", "protocol", "code"] as const;
  const requests = counter({
    name: "gatehouse_rpc_requests_total",
    help: "RPCs answered, by service, method, protocol and gRPC code.",
    labelNames: rpcLabels,
  });
  const latency = new Histogram({
    name: "gatehouse_rpc_duration_seconds",
    help: "Time from a request's arrival to its answer, by service, method, protocol and gRPC code.",
    labelNames: rpcLabels,
    buckets: latencyBuckets,
    registers: [registry],
  });
  const decisions = counter({
    name: "gatehouse_authorization_decisions_total",
    help: "Access decisions on non-public RPCs, by outcome (allowed, denied, unauthenticated, invalid).",
    labelNames: ["outcome"],
  });
  const tokens = counter({
    name: "gatehouse_token_requests_total",
    help: "Requests to token endpoints (STS exchange, login, registry token), by outcome.",
    labelNames: ["kind", "outcome"],
  });
  const store = new Histogram({
    name: "gatehouse_store_operation_duration_seconds",
    help: "Store operations, by operation (a Store method).",
    labelNames: ["operation"],
    buckets: latencyBuckets,
    registers: [registry],
  });
  if (opts.accessCache) {
    const read = opts.accessCache;
    // Counted by the store as plain integers (no call into prom-client on its hot path),
    // read here at scrape time.
    let seen = { hits: 0, misses: 0 };
    counter({
      name: "gatehouse_access_cache_lookups_total",
      help: "Access-cache lookups (capabilities, identity existence), by result (hit, miss).",
      labelNames: ["result"],
      collect() {
        const now = read();
        this.inc({ result: "hit" }, now.hits - seen.hits);
        this.inc({ result: "miss" }, now.misses - seen.misses);
        seen = { ...now };
      },
    });
  }

  // Every (service, method) served, with one slot array per protocol: the label children are
  // looked up by index after the first call, never rebuilt per request.
  interface RpcEntry {
    service: string;
    method: string;
    slots: CodeSlots[];
    /** The token counters of a token-issuing RPC, by outcome. */
    token: Record<TokenOutcome, Counter.Internal> | undefined;
  }
  const byRpc = new Map<string, RpcEntry>();
  const entry = (service: string, method: string): RpcEntry => {
    const kind = opts.tokenRpcs?.[`${service}/${method}`];
    return {
      service,
      method,
      slots: protocols.map(() => new Array(codeCount).fill(undefined) as CodeSlots),
      token: kind && {
        issued: tokens.labels(kind, "issued"),
        refused: tokens.labels(kind, "refused"),
        error: tokens.labels(kind, "error"),
      },
    };
  };
  for (const s of opts.services) {
    for (const m of s.methods) byRpc.set(`${s.typeName}/${m.name}`, entry(s.typeName, m.name));
  }
  const unknown = entry(unknownLabel, unknownLabel);
  const protocolIndex = new Map<string, number>(protocols.map((p, i) => [p, i]));
  const codeIndex = new Map<string | number, number>();
  for (let c = 0; c <= 16; c++) {
    codeIndex.set(c, c);
    codeIndex.set(codeName(c), c);
  }

  const decisionChildren: Record<DecisionOutcome, Counter.Internal> = {
    allowed: decisions.labels("allowed"),
    denied: decisions.labels("denied"),
    unauthenticated: decisions.labels("unauthenticated"),
    invalid: decisions.labels("invalid"),
  };
  const tokenChildren = new Map<string, Counter.Internal>();
  for (const kind of ["sts_exchange", "login", "registry_token"] satisfies TokenKind[]) {
    for (const outcome of ["issued", "refused", "error"] satisfies TokenOutcome[]) {
      tokenChildren.set(`${kind} ${outcome}`, tokens.labels(kind, outcome));
    }
  }
  const storeChildren = new Map<string, Histogram.Internal<string>>();
  for (const op of opts.storeOperations ?? []) storeChildren.set(op, store.labels(op));

  return {
    registry,
    rpc(rpc, protocol, code, seconds) {
      const e = (rpc === undefined ? undefined : byRpc.get(rpc)) ?? unknown;
      const slots = e.slots[protocolIndex.get(protocol) ?? 0]!;
      const c = (code === undefined ? undefined : codeIndex.get(code)) ?? notRecorded;
      let child = slots[c];
      if (!child) {
        const labels: LabelValues<(typeof rpcLabels)[number]> = {
          service: e.service,
          method: e.method,
          protocol,
          code: c === notRecorded ? "NOT_RECORDED" : codeName(c),
        };
        child = { count: requests.labels(labels), latency: latency.labels(labels) };
        slots[c] = child;
      }
      child.count.inc();
      child.latency.observe(seconds);
      if (e.token) e.token[tokenOutcome(c)].inc();
    },
    authorization(outcome) {
      decisionChildren[outcome].inc();
    },
    token(kind, outcome) {
      tokenChildren.get(`${kind} ${outcome}`)?.inc();
    },
    storeOperation(operation, seconds) {
      storeChildren.get(operation)?.observe(seconds);
    },
  };
}

/** A token RPC's outcome from its code: OK issued; server-side failures error; else refused. */
function tokenOutcome(code: number): TokenOutcome {
  if (code === 0) return "issued";
  // UNKNOWN, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL, UNAVAILABLE, DATA_LOSS,
  // and calls whose code was not recorded.
  return [2, 4, 8, 10, 13, 14, 15, notRecorded].includes(code) ? "error" : "refused";
}
