import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type AccountAssociations,
  AccountAssociations_AmazonSchema,
  AccountAssociations_AzureSchema,
  AccountAssociations_GoogleSchema,
  AccountAssociationsListSchema,
  AccountAssociationsSchema,
  type GroupAccountAssociationsService,
} from "../../../gen/gatehouse/iam/v1/account_associations_pb.js";
import {
  type AccountAssociation as V2AccountAssociation,
  type AccountAssociationSchema as V2AccountAssociationSchema,
  AccountAssociationsService as V2AccountAssociationsService,
} from "../../../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import { listOrGet } from "./v1-list.js";
import type { V1Deps } from "./v2-calls.js";

const v2 = V2AccountAssociationsService.method;

/** What a v1 PUT replaces: every association v1 shows (not GitHub's, which it does not). */
const replaced = ["name", "description", "amazon", "google", "azure"];

/**
 * Create the v1 GroupAccountAssociationsService, an adapter over the v2
 * AccountAssociationsService: v1 keys the record by its group, whose uid v2 gives it too.
 */
export function createV1AccountAssociationsService({
  v2: calls,
}: V1Deps): ServiceImpl<typeof GroupAccountAssociationsService> {
  return {
    async create(req, ctx) {
      const made = await calls.call(
        v2.createAccountAssociation,
        { parent: req.group, accountAssociation: toV2(req) },
        ctx,
      );
      return toV1AccountAssociations(made);
    },

    async update(req, ctx) {
      const updated = await calls.call(
        v2.updateAccountAssociation,
        { accountAssociation: { ...toV2(req), uid: req.group }, updateMask: { paths: replaced } },
        ctx,
      );
      return toV1AccountAssociations(updated);
    },

    async list(req, ctx) {
      const items = await listOrGet({
        what: "account associations",
        id: req.group,
        get: (uid) => calls.call(v2.getAccountAssociation, { uid }, ctx),
        page: async (pageSize, pageToken) => {
          const page = await calls.call(
            v2.listAccountAssociations,
            { name: req.name, pageSize, pageToken },
            ctx,
          );
          return { items: page.accountAssociations, nextPageToken: page.nextPageToken };
        },
        keep: (a) => req.name === "" || a.name === req.name,
      });
      return create(AccountAssociationsListSchema, { items: items.map(toV1AccountAssociations) });
    },

    async delete(req, ctx) {
      await calls.call(v2.deleteAccountAssociation, { uid: req.group }, ctx);
      return {};
    },
  };
}

/** The writable part of v1 associations, as v2 takes it. */
function toV2(a: AccountAssociations): MessageInitShape<typeof V2AccountAssociationSchema> {
  return {
    name: a.name,
    description: a.description,
    ...(a.amazon ? { amazon: { account: a.amazon.account } } : {}),
    ...(a.google
      ? { google: { projectId: a.google.projectId, projectNumber: a.google.projectNumber } }
      : {}),
    ...(a.azure
      ? {
          azure: {
            tenantId: a.azure.tenantId,
            clientIds: [...new Set(Object.values(a.azure.clientIds))].sort(),
            clientIdKeys: a.azure.clientIds,
          },
        }
      : {}),
  };
}

/** v2 associations in v1's shape. */
function toV1AccountAssociations(a: V2AccountAssociation): AccountAssociations {
  return create(AccountAssociationsSchema, {
    group: a.uid,
    name: a.name,
    description: a.description,
    amazon: a.amazon
      ? create(AccountAssociations_AmazonSchema, { account: a.amazon.account })
      : undefined,
    google: a.google
      ? create(AccountAssociations_GoogleSchema, {
          projectId: a.google.projectId,
          projectNumber: a.google.projectNumber,
        })
      : undefined,
    azure: a.azure
      ? create(AccountAssociations_AzureSchema, {
          tenantId: a.azure.tenantId,
          clientIds: v1ClientIds(a.azure),
        })
      : undefined,
  });
}

/**
 * v1's client id map: each id under the names v2 keeps for it, and an id no name names (one
 * a v2 caller added) under itself, so that no id is lost.
 */
function v1ClientIds(azure: {
  clientIds: readonly string[];
  clientIdKeys: Record<string, string>;
}): Record<string, string> {
  const out: Record<string, string> = {};
  const named = new Set<string>();
  for (const [key, id] of Object.entries(azure.clientIdKeys)) {
    out[key] = id;
    named.add(id);
  }
  for (const id of azure.clientIds) if (!named.has(id) && !(id in out)) out[id] = id;
  return out;
}
