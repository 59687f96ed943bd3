import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type IdentityProvider,
  IdentityProviderListSchema,
  IdentityProviderSchema,
  type IdentityProvidersService,
  OIDCSchema,
} from "../../../gen/gatehouse/iam/v1/identity_providers_pb.js";
import {
  type IdentityProvider as V2IdentityProvider,
  type IdentityProviderSchema as V2IdentityProviderSchema,
  IdentityProvidersService as V2IdentityProvidersService,
} from "../../../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
import { listOrGet, uidpKeeps, v2Uidp } from "./v1-list.js";
import type { V1Deps } from "./v2-calls.js";

const v2 = V2IdentityProvidersService.method;

/** Create the v1 IdentityProvidersService, an adapter over the v2 IdentityProvidersService. */
export function createV1IdentityProvidersService({
  v2: calls,
}: V1Deps): ServiceImpl<typeof IdentityProvidersService> {
  return {
    async create(req, ctx) {
      const body = req.identityProvider ?? create(IdentityProviderSchema);
      const made = await calls.call(
        v2.createIdentityProvider,
        { parent: req.parentId, identityProvider: toV2(body) },
        ctx,
      );
      return toV1IdentityProvider(made);
    },

    async update(req, ctx) {
      // PUT replaces every field v1 may write; v2 keeps a secret left out (same issuer, client).
      const updated = await calls.call(
        v2.updateIdentityProvider,
        {
          identityProvider: { ...toV2(req), uid: req.id },
          updateMask: { paths: ["name", "description", "default_role", "oidc"] },
        },
        ctx,
      );
      return toV1IdentityProvider(updated);
    },

    async list(req, ctx) {
      const items = await listOrGet({
        what: "identity providers",
        id: req.id,
        get: (uid) => calls.call(v2.getIdentityProvider, { uid }, ctx),
        page: async (pageSize, pageToken) => {
          const page = await calls.call(
            v2.listIdentityProviders,
            { uidp: v2Uidp(req.uidp), name: req.name, pageSize, pageToken },
            ctx,
          );
          return { items: page.identityProviders, nextPageToken: page.nextPageToken };
        },
        keep: (p) => uidpKeeps(req.uidp, p.uid) && (req.name === "" || p.name === req.name),
      });
      return create(IdentityProviderListSchema, { items: items.map(toV1IdentityProvider) });
    },

    async delete(req, ctx) {
      await calls.call(v2.deleteIdentityProvider, { uid: req.id }, ctx);
      return {};
    },
  };
}

/** The writable part of a v1 provider, as v2 takes it. */
function toV2(p: IdentityProvider): MessageInitShape<typeof V2IdentityProviderSchema> {
  const oidc = p.configuration.case === "oidc" ? p.configuration.value : undefined;
  return {
    name: p.name,
    description: p.description,
    defaultRole: p.defaultRole,
    ...(oidc
      ? {
          oidc: {
            issuer: oidc.issuer,
            clientId: oidc.clientId,
            clientSecret: oidc.clientSecret,
            additionalScopes: oidc.additionalScopes,
            groupsClaim: oidc.groupsClaim,
          },
        }
      : {}),
  };
}

/** A v2 provider in v1's shape; v2 never returns the client secret. */
function toV1IdentityProvider(p: V2IdentityProvider): IdentityProvider {
  const out = create(IdentityProviderSchema, {
    id: p.uid,
    name: p.name,
    description: p.description,
    defaultRole: p.defaultRole,
  });
  if (p.oidc) {
    out.configuration = {
      case: "oidc",
      value: create(OIDCSchema, {
        issuer: p.oidc.issuer,
        clientId: p.oidc.clientId,
        additionalScopes: p.oidc.additionalScopes,
        groupsClaim: p.oidc.groupsClaim,
      }),
    };
  }
  return out;
}
