import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  DeleteScimTokenResponseSchema,
  type ScimConnection,
  ScimConnectionSchema,
  type ScimService,
  ScimTokenSchema,
} from "../../../gen/gatehouse/iam/v2beta1/scim_pb.js";
import { storeOf } from "../../call-store.js";
import type { Config } from "../../config.js";
import { invalidField, notFound } from "../../errors.js";
import { newScimToken, scimBaseUrl } from "../../scim/scim-token.js";
import type { ScimConnectionRecord } from "../../store/scim-store.js";
import type { Store } from "../../store/store.js";
import { parentOf } from "../../uid.js";
import { callerOf } from "../caller.js";

/** What the SCIM service needs. */
export interface ScimDeps {
  store: Store;
  config: Pick<Config, "baseUrl">;
  now: () => number;
}

/**
 * Create the ScimService: an organization's SCIM connection and its token (docs/scim.md).
 * Its rule asks for identity_providers.update at the organization: whoever may change how
 * its people sign in may let its directory provision them. The token is answered once; the
 * store keeps its hash.
 */
export function createScimService(deps: ScimDeps): ServiceImpl<typeof ScimService> {
  const { store, config, now } = deps;
  const organization = (org: string) => {
    if (parentOf(org) !== "") throw invalidField("org", "must be an organization (a root group)");
    return org;
  };
  const toConnection = (c: ScimConnectionRecord): ScimConnection =>
    create(ScimConnectionSchema, {
      org: c.orgUid,
      baseUrl: scimBaseUrl(config.baseUrl, c.orgUid),
      creatorUid: c.creatorUid,
      createTime: timestampFromMs(c.createTime),
      useTime: timestampFromMs(c.useTime),
    });
  return {
    async createScimToken(req, ctx) {
      const store = storeOf(ctx);
      const org = organization(req.org);
      const { token, hash } = newScimToken();
      const connection = await store.putScimConnection({
        orgUid: org,
        tokenHash: hash,
        creatorUid: callerOf(ctx).identityUid,
        now: now(),
      });
      return create(ScimTokenSchema, { connection: toConnection(connection), token });
    },
    async getScimConnection(req) {
      const found = await store.getScimConnection(organization(req.org));
      if (!found) throw notFound("scim connection", req.org);
      return toConnection(found);
    },
    async deleteScimToken(req, ctx) {
      const store = storeOf(ctx);
      await store.deleteScimConnection(organization(req.org));
      return create(DeleteScimTokenResponseSchema, {});
    },
  };
}
