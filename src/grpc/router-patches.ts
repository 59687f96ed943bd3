import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import { addDeadlineClamp } from "./deadline-clamp.js";
import { addGrpcMessageEncoding } from "./grpc-message-encoding.js";
import { addGrpcWebErrorInfo } from "./grpc-web-error-info.js";
import { addGrpcWebText } from "./grpc-web-text.js";
import { addConnectParseErrorStatus } from "./request-parse-errors.js";
import { addUnknownRpcAnswer } from "./unknown-rpc.js";

/** One patch to what connect-node's router reads or answers: an onRequest hook on the app. */
export interface RouterPatch {
  readonly name: string;
  /** Patches whose hooks must be added before this one's. */
  readonly after: readonly string[];
  add(app: FastifyInstance, opts: RouterPatchOptions): void;
}

/** Options of the router patches. */
export interface RouterPatchOptions {
  /** ErrorInfo.domain of the errors the patches add. */
  readonly domain: string;
  /** Each RPC path the router serves, and the HTTP methods it answers (connect-routes.ts). */
  readonly served: ReadonlyMap<string, readonly string[]>;
}

/**
 * The patches, in the order their hooks are added. A hook added later wraps the answer's
 * write functions outside those added before it: it sees what the router writes first.
 */
export const routerPatches: readonly RouterPatch[] = [
  {
    // `grpc-message` in the gRPC spec's percent-encoding (connect-es's is not grpc-js's).
    name: "grpc-message-encoding",
    after: [],
    add: (app, o) => addGrpcMessageEncoding(app, o.domain),
  },
  {
    // A deadline longer than Node's timers hold is clamped before the router reads it.
    name: "deadline-clamp",
    after: [],
    add: (app) => addDeadlineClamp(app),
  },
  {
    // gRPC-Web text mode: base64 in and out.
    name: "grpc-web-text",
    after: [],
    add: (app) => addGrpcWebText(app),
  },
  {
    // ErrorInfo on gRPC-Web errors the protocol layer raised: it must see binary frames,
    // before the text mode encodes them.
    name: "grpc-web-error-info",
    after: ["grpc-web-text"],
    add: (app, o) => addGrpcWebErrorInfo(app, o.domain),
  },
  {
    // UNIMPLEMENTED for an RPC nobody serves, in the caller's protocol (it writes its own
    // status, trailers-only, and needs no other patch); 405 for a method a served one does
    // not answer.
    name: "unknown-rpc",
    after: [],
    add: (app, o) => addUnknownRpcAnswer(app, o.domain, o.served),
  },
  {
    // A request the router cannot decode is INVALID_ARGUMENT, not INTERNAL; ErrorInfo on the
    // Connect protocol's errors.
    name: "parse-error-status",
    after: [],
    add: (app, o) => addConnectParseErrorStatus(app, o.domain),
  },
];

/**
 * Check that each patch comes after those it names in `after`, and that every name it names
 * is in the list: throws naming the first that is not.
 */
export function checkPatchOrder(patches: readonly RouterPatch[]): void {
  const added = new Set<string>();
  const all = new Set(patches.map((p) => p.name));
  for (const p of patches) {
    for (const a of p.after) {
      if (!all.has(a)) throw new Error(`router patch ${p.name}: no patch ${a} to come after`);
      if (!added.has(a)) throw new Error(`router patch ${p.name} must come after ${a}`);
    }
    added.add(p.name);
  }
}

/**
 * Fastify plugin adding every patch to connect-node's router, in routerPatches' order (checked
 * when it is registered). Its hooks are the app's, not an encapsulated context's: they must
 * reach the router's routes. Register it after the body gate and the lean Connect path (the
 * text mode wraps the body the gate hands on; the lean path's answers need no patch), and
 * before the router.
 */
export const routerPatchesPlugin: FastifyPluginAsync<RouterPatchOptions> = async (app, opts) => {
  checkPatchOrder(routerPatches);
  for (const patch of routerPatches) patch.add(app, opts);
};
// What fastify-plugin sets: the plugin's hooks are added to the parent context.
Object.assign(routerPatchesPlugin, { [Symbol.for("skip-override")]: true });
