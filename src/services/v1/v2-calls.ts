import {
  create,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import type { ContextValues, HandlerContext } from "@connectrpc/connect";
import { type CallChange, kCallChange } from "../../call-store.js";
import { fromStoreError } from "../../errors.js";
import { adapterCallScope } from "../../events/audit-interceptor.js";
import type { ServiceRegistration } from "../../service-registration.js";
import { StoreError } from "../../store/store.js";

/** Authorize one v2 call for the caller of the running v1 call (AccessControl.authorizeCall). */
export type AuthorizeCall = (
  method: DescMethod,
  message: unknown,
  values: ContextValues,
) => Promise<void>;

/**
 * V2Calls is how a v1 adapter reaches v2: the very v2 implementation the server serves,
 * behind that v2 RPC's own authorization rule, so validation, authorization and business
 * rules exist once.
 */
export interface V2Calls {
  /** Call a v2 unary method with `request`, as the caller of `ctx`. */
  call<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    request: MessageInitShape<I>,
    ctx: HandlerContext,
  ): Promise<MessageShape<O>>;
  /**
   * Refuse `request` as that v2 method's authorization rule would, without calling it: for an
   * adapter that has nothing to call but must still refuse whom the call would have refused.
   */
  authorize<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    request: MessageInitShape<I>,
    ctx: HandlerContext,
  ): Promise<void>;
}

/** What the v1 adapters need: the v2 calls. */
export interface V1Deps {
  v2: V2Calls;
}

type UnaryHandler = (req: unknown, ctx: HandlerContext) => Promise<unknown>;

/** Create V2Calls over the v2 registrations and the access control's per-call authorization. */
export function createV2Calls(
  registrations: readonly ServiceRegistration[],
  authorizeCall: AuthorizeCall,
): V2Calls {
  const impls = new Map(registrations.map((r) => [r.service.typeName, r.impl]));
  return {
    authorize(method, request, ctx) {
      return authorizeCall(method, create(method.input, request), ctx.values);
    },
    async call(method, request, ctx) {
      const impl = impls.get(method.parent.typeName) as Record<string, unknown> | undefined;
      const handler = impl?.[method.localName] as UnaryHandler | undefined;
      // A programming error, not the caller's: the adapter names a method nobody serves.
      if (!handler)
        throw new Error(`v1 adapter: ${method.parent.typeName} does not serve ${method.name}`);
      const message = create(method.input, request);
      await authorizeCall(method, message, ctx.values);
      // A change is recorded by the v2 call that makes it, under that call's type: the same
      // event a v2 caller's change records, one per call (each binding of a v1 batch).
      const outer = ctx.values.get(kCallChange);
      const scope = adapterCallScope(outer?.scope, method, message);
      try {
        // The v2 handler is handed its own call's view, over the v1 call's values.
        const inner =
          outer && scope ? withChange(ctx, { scope, store: outer.store.recording(scope) }) : ctx;
        return (await handler(message, inner)) as MessageShape<typeof method.output>;
      } catch (err) {
        // As the caller of v2 would see it, so an adapter can act on the code.
        throw err instanceof StoreError ? fromStoreError(err) : err;
      }
    },
  };
}

/**
 * `ctx` with `change` as its call's change (kCallChange): the same call, its other values
 * read through from `ctx`'s.
 */
function withChange(ctx: HandlerContext, change: CallChange): HandlerContext {
  const values = (Object.create(ctx.values) as ContextValues).set(kCallChange, change);
  return {
    service: ctx.service,
    method: ctx.method,
    protocolName: ctx.protocolName,
    requestMethod: ctx.requestMethod,
    url: ctx.url,
    // Read when asked: a lean path's call makes these only if someone reads them.
    get signal() {
      return ctx.signal;
    },
    get requestHeader() {
      return ctx.requestHeader;
    },
    get responseHeader() {
      return ctx.responseHeader;
    },
    get responseTrailer() {
      return ctx.responseTrailer;
    },
    timeoutMs: () => ctx.timeoutMs(),
    values,
  };
}
