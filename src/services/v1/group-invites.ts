import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  GroupInviteListSchema,
  GroupInviteSchema,
  type GroupInvitesService,
  StoredGroupInviteSchema,
} from "../../../gen/gatehouse/iam/v1/group_invites_pb.js";
import {
  type GroupInvite as V2GroupInvite,
  GroupInvitesService as V2GroupInvitesService,
} from "../../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import { parentOf } from "../../uid.js";
import { roleHydrator } from "./roles.js";
import { listOrGet } from "./v1-list.js";
import type { V1Deps } from "./v2-calls.js";

const v2 = V2GroupInvitesService.method;

/** Create the v1 GroupInvitesService, an adapter over the v2 GroupInvitesService. */
export function createV1GroupInvitesService({
  v2: calls,
}: V1Deps): ServiceImpl<typeof GroupInvitesService> {
  return {
    async create(req, ctx) {
      const made = await calls.call(
        v2.createGroupInvite,
        {
          parent: req.group,
          groupInvite: {
            roleUid: req.role,
            email: req.email,
            singleUse: req.singleUse,
            ...(req.ttl ? { ttl: req.ttl } : {}),
          },
        },
        ctx,
      );
      return create(GroupInviteSchema, {
        id: made.uid,
        expiration: made.expirationTime,
        role: await roleHydrator(calls, ctx)(made.role),
        code: made.code ?? "",
      });
    },

    async list(req, ctx) {
      const items = await listOrGet({
        what: "group invites",
        id: req.id,
        get: (uid) => calls.call(v2.getGroupInvite, { uid }, ctx),
        page: async (pageSize, pageToken) => {
          const page = await calls.call(
            v2.listGroupInvites,
            { uidp: { descendantsOf: "", childrenOf: req.group }, pageSize, pageToken },
            ctx,
          );
          return { items: page.groupInvites, nextPageToken: page.nextPageToken };
        },
        keep: (i: V2GroupInvite) => req.group === "" || parentOf(i.uid) === req.group,
      });
      const role = roleHydrator(calls, ctx);
      const out = [];
      for (const i of items) {
        out.push(
          create(StoredGroupInviteSchema, {
            id: i.uid,
            expiration: i.expirationTime,
            role: await role(i.role),
            email: i.email,
            createdAt: i.createTime,
            singleUse: i.singleUse,
          }),
        );
      }
      return create(GroupInviteListSchema, { items: out });
    },

    async delete(req, ctx) {
      await calls.call(v2.deleteGroupInvite, { uid: req.id }, ctx);
      return {};
    },
  };
}
