import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { CallerSchema, type CallerService } from "../../../gen/gatehouse/iam/v2beta1/caller_pb.js";
import type { RoleBindingRecord } from "../../store/iam-store.js";
import type { Store } from "../../store/store.js";
import { callerOf } from "../caller.js";
import { requireFound } from "../require-found.js";
import { heldBindings } from "../team-bindings.js";
import { toIdentity } from "./identities.js";
import { toRoleBinding } from "./role-bindings.js";

/** What the caller service needs. */
export interface CallerDeps {
  store: Store;
}

/** The most bindings GetCaller answers with; an identity rarely holds more than a few. */
const maxBindings = 1000;

/**
 * Create the CallerService: who the bearer of the token is, and where it holds roles. Any
 * authenticated caller may ask about itself, and only about itself. Bindings to its teams are
 * among its bindings.
 */
export function createCallerService(deps: CallerDeps): ServiceImpl<typeof CallerService> {
  const { store } = deps;
  return {
    async getCaller(_req, ctx) {
      const { identityUid } = callerOf(ctx);
      const identity = await requireFound("identity", identityUid, (uid) => store.getIdentity(uid));
      const bindings: RoleBindingRecord[] = [];
      // Its own and its teams' (each carries its team): where the caller holds roles.
      for await (const b of heldBindings(store, identityUid, "")) {
        if (bindings.push(b) >= maxBindings) break;
      }
      return create(CallerSchema, {
        identity: toIdentity(identity),
        roleBindings: bindings.map(toRoleBinding),
      });
    },
  };
}
