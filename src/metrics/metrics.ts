import type { DescService } from "@bufbuild/protobuf";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { DecisionOutcome } from "../auth/access-interceptor.js";
import { codeName } from "../errors.js";
import {
  type CounterCell,
  counterFamily,
  type HistogramCell,
  histogramFamily,
  observe,
} from "./families.js";

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

/** The series of one (service, method, protocol): one pair per code, made on first use. */
type CodeSlots = ({ count: CounterCell; latency: HistogramCell } | undefined)[];

/**
 * Create the metrics of one server on a registry of its own (never prom-client's global one,
 * so that two servers in one process, as in tests, do not mix).
 */
export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  const rpcLabels = ["service", "method", "protocol", "code"];
  const requests = counterFamily(
    registry,
    "gatehouse_rpc_requests_total",
    "RPCs answered, by service, method, protocol and gRPC code.",
    rpcLabels,
  );
  const latency = histogramFamily(
    registry,
    "gatehouse_rpc_duration_seconds",
    "Time from a request's arrival to its answer, by service, method, protocol and gRPC code.",
    rpcLabels,
    latencyBuckets,
  );
  const decisions = counterFamily(
    registry,
    "gatehouse_authorization_decisions_total",
    "Access decisions on non-public RPCs, by outcome (allowed, denied, unauthenticated, invalid).",
    ["outcome"],
  );
  const tokens = counterFamily(
    registry,
    "gatehouse_token_requests_total",
    "Requests to token endpoints (STS exchange, login, registry token), by outcome.",
    ["kind", "outcome"],
  );
  const store = histogramFamily(
    registry,
    "gatehouse_store_operation_duration_seconds",
    "Store operations, by operation (a Store method).",
    ["operation"],
    latencyBuckets,
  );
  if (opts.accessCache) {
    const read = opts.accessCache;
    // Counted by the store as plain integers, read here at scrape time.
    registry.registerMetric({
      name: "gatehouse_access_cache_lookups_total",
      get: () => {
        const now = read();
        return {
          name: "gatehouse_access_cache_lookups_total",
          help: "Access-cache lookups (capabilities, identity existence), by result (hit, miss).",
          type: "counter",
          values: [
            { labels: { result: "hit" }, value: now.hits },
            { labels: { result: "miss" }, value: now.misses },
          ],
        };
      },
    } as never);
  }

  // Every (service, method) served, with one slot array per protocol: the series are looked
  // up by index after the first call, never rebuilt per request.
  interface RpcEntry {
    service: string;
    method: string;
    slots: CodeSlots[];
    /** The token counters of a token-issuing RPC, by outcome. */
    token: Record<TokenOutcome, CounterCell> | undefined;
  }
  const tokenCells = (kind: TokenKind): Record<TokenOutcome, CounterCell> => ({
    issued: tokens.cell([kind, "issued"]),
    refused: tokens.cell([kind, "refused"]),
    error: tokens.cell([kind, "error"]),
  });
  const byKind: Record<TokenKind, Record<TokenOutcome, CounterCell>> = {
    sts_exchange: tokenCells("sts_exchange"),
    login: tokenCells("login"),
    registry_token: tokenCells("registry_token"),
  };
  const byRpc = new Map<string, RpcEntry>();
  const entry = (service: string, method: string): RpcEntry => {
    const kind = opts.tokenRpcs?.[`${service}/${method}`];
    return {
      service,
      method,
      slots: protocols.map(() => new Array(codeCount).fill(undefined) as CodeSlots),
      token: kind && byKind[kind],
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

  const decisionCells: Record<DecisionOutcome, CounterCell> = {
    allowed: decisions.cell(["allowed"]),
    denied: decisions.cell(["denied"]),
    unauthenticated: decisions.cell(["unauthenticated"]),
    invalid: decisions.cell(["invalid"]),
  };
  const storeCells = new Map<string, HistogramCell>();
  for (const op of opts.storeOperations ?? []) storeCells.set(op, store.cell([op]));

  return {
    registry,
    rpc(rpc, protocol, code, seconds) {
      const e = (rpc === undefined ? undefined : byRpc.get(rpc)) ?? unknown;
      const p = protocolIndex.get(protocol) ?? 0;
      const slots = e.slots[p]!;
      const c = (code === undefined ? undefined : codeIndex.get(code)) ?? notRecorded;
      let slot = slots[c];
      if (!slot) {
        const labels = [
          e.service,
          e.method,
          protocols[p]!,
          c === notRecorded ? "NOT_RECORDED" : codeName(c),
        ];
        slot = { count: requests.cell(labels), latency: latency.cell(labels) };
        slots[c] = slot;
      }
      slot.count.value++;
      observe(slot.latency, latencyBuckets, seconds);
      if (e.token) e.token[tokenOutcome(c)].value++;
    },
    authorization(outcome) {
      decisionCells[outcome].value++;
    },
    token(kind, outcome) {
      byKind[kind][outcome].value++;
    },
    storeOperation(operation, seconds) {
      const cell = storeCells.get(operation);
      if (cell) observe(cell, latencyBuckets, seconds);
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
