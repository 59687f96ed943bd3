import { clone, create, type DescMessage } from "@bufbuild/protobuf";
import { type FieldMask, timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type AccountAssociation,
  AccountAssociationSchema,
  type AccountAssociationsService,
  AmazonSchema,
  AzureSchema,
  GithubSchema,
  GoogleSchema,
  ListAccountAssociationsResponseSchema,
} from "../../../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import { storeOf } from "../../call-store.js";
import { notFound } from "../../errors.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import type {
  AccountAssociationPatch,
  AccountAssociationRecord,
  AccountLinks,
} from "../../store/iam-store.js";
import { accountAssociations } from "../../store/rows/account-association-rows.js";
import type { Store } from "../../store/store.js";
import {
  checkDescription,
  checkUid,
  displayNameRule,
  isDisplaySafe,
  labelsPatch,
  maxNameLength,
  type Violations,
  violations,
} from "../../validation/field-rules.js";
import { listOptionsOf } from "../caller.js";
import { deleteIfPresent } from "../idempotent-delete.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { overlayPaths, subPaths, updateRequest } from "../update-mask.js";

/** The fields a List of accountAssociations may be ordered by: its message's scalars that a column keeps. */
const accountAssociationsSorts = sortFieldsOf(
  AccountAssociationSchema,
  accountAssociations.listColumns,
);

/** What the account-associations service needs. */
export interface AccountAssociationsDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
}

const providers = ["amazon", "google", "azure", "github"] as const;

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(AccountAssociationSchema);

const awsAccount = /^[0-9]{12}$/;
const gcpProjectId = /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/;
const gcpProjectNumber = /^[0-9]{1,20}$/;
const uuid = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const maxListLength = 100;
// v1 keys its client ids by a name (an application's); a name is a short label.
const maxKeyLength = 128;

/**
 * Create the AccountAssociationsService: the cloud accounts a group is linked to. A group has
 * at most one association, whose uid is the group's own; it goes when the group does.
 */
export function createAccountAssociationsService(
  deps: AccountAssociationsDeps,
): ServiceImpl<typeof AccountAssociationsService> {
  const { store, lists, now } = deps;
  return {
    async listAccountAssociations(req, ctx) {
      const query = lists.parse(req, {}, { ...listOptionsOf(ctx), sort: accountAssociationsSorts });
      const page = await store.listAccountAssociations(query);
      const { items, ...envelope } = lists.finish(query, page, sortValueOf);
      return create(ListAccountAssociationsResponseSchema, {
        accountAssociations: items.map(toAccountAssociation),
        ...envelope,
      });
    },

    async getAccountAssociation(req) {
      return toAccountAssociation(
        await requireFound("account association", req.uid, (uid) =>
          store.getAccountAssociation(uid),
        ),
      );
    },

    async createAccountAssociation(req, ctx) {
      const store = storeOf(ctx);
      const body = req.accountAssociation ?? create(AccountAssociationSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkName(v, body.name);
      checkDescription(v, "description", body.description);
      const links = checkLinks(v, body, new Set(providers));
      if (Object.keys(links).length === 0) {
        v.add("accountAssociation", "needs at least one of amazon, google, azure and github");
      }
      v.throwIfAny();
      if (!(await store.getGroup(req.parent))) throw notFound("group", req.parent);
      const association = await store.createAccountAssociation({
        uid: req.parent,
        name: body.name,
        description: body.description,
        ...links,
        now: now(),
      });
      return toAccountAssociation(association);
    },

    async updateAccountAssociation(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.accountAssociation, req.updateMask);
      const current = await store.getAccountAssociation(body.uid);
      if (!current) throw notFound("account association", body.uid);
      const patch: AccountAssociationPatch = labelsPatch(v, fields, body, (v, _field, name) =>
        checkName(v, name),
      );
      const named = new Set(providers.filter((p) => fields.has(p)));
      const given = withCurrentBlocks(body, toAccountAssociation(current), req.updateMask, named);
      const links = checkLinks(v, given, named);
      // A named block that is absent from the body unlinks that provider.
      for (const p of named) Object.assign(patch, { [p]: links[p] ?? null });
      const remaining = providers.filter((p) => (named.has(p) ? links[p] : current[p]));
      if (remaining.length === 0) {
        v.add("accountAssociation", "needs at least one of amazon, google, azure and github");
      }
      v.throwIfAny();
      return toAccountAssociation(await store.updateAccountAssociation(body.uid, patch, now()));
    },

    async deleteAccountAssociation(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      // A second Delete answers OK: see deleteIfPresent.
      await deleteIfPresent(() => store.deleteAccountAssociation(req.uid));
      return {};
    },
  };
}

function checkName(v: Violations, name: string): void {
  if (name.length > maxNameLength) v.add("name", `must be at most ${maxNameLength} characters`);
  else if (!isDisplaySafe(name)) v.add("name", displayNameRule);
}

/** Check the provider blocks of `only` present in `body`, one violation per failing field. */
const blockSchemas = {
  amazon: AmazonSchema,
  google: GoogleSchema,
  azure: AzureSchema,
  github: GithubSchema,
} as const;

/**
 * The body with each named provider block that names only some of its sub-fields (a mask
 * path such as `google.project_id`, or, without a mask, the sub-fields populated) merged into
 * the current block: those change, the others keep their values.
 */
function withCurrentBlocks(
  body: AccountAssociation,
  current: AccountAssociation,
  mask: FieldMask | undefined,
  named: ReadonlySet<(typeof providers)[number]>,
): AccountAssociation {
  const out = clone(AccountAssociationSchema, body);
  for (const p of named) {
    const given = body[p];
    const now = current[p];
    if (!given || !now) continue;
    const schema = blockSchemas[p] as DescMessage;
    const sub = subPaths(p, mask, schema, given);
    if (sub)
      Object.assign(out, { [p]: overlayPaths(schema, now as never, given as never, sub, p) });
  }
  return out;
}

function checkLinks(
  v: Violations,
  body: AccountAssociation,
  only: ReadonlySet<(typeof providers)[number]>,
): AccountLinks {
  const out: AccountLinks = {};
  const { amazon, google, azure, github } = body;
  if (amazon && only.has("amazon")) {
    if (!awsAccount.test(amazon.account)) v.add("amazon.account", "must be exactly 12 digits");
    out.amazon = { account: amazon.account };
  }
  if (google && only.has("google")) {
    if (!gcpProjectId.test(google.projectId)) {
      v.add(
        "google.projectId",
        "must be 6-30 lowercase letters, digits and -, the first a letter, the last not -",
      );
    }
    if (!gcpProjectNumber.test(google.projectNumber)) {
      v.add("google.projectNumber", "must be 1-20 digits");
    }
    out.google = { projectId: google.projectId, projectNumber: google.projectNumber };
  }
  if (azure && only.has("azure")) {
    if (!uuid.test(azure.tenantId)) v.add("azure.tenantId", "must be a UUID");
    if (azure.clientIds.length > maxListLength) {
      v.add("azure.clientIds", `must be at most ${maxListLength} ids`);
    } else if (azure.clientIds.some((id) => !uuid.test(id))) {
      v.add("azure.clientIds", "each client id must be a UUID");
    }
    const clientIds = azure.clientIds.map((id) => id.toLowerCase());
    const keys = Object.entries(azure.clientIdKeys);
    if (keys.length > maxListLength) {
      v.add("azure.clientIdKeys", `must name at most ${maxListLength} ids`);
    } else if (keys.some(([k]) => k === "" || k.length > maxKeyLength)) {
      v.add("azure.clientIdKeys", `each name must be 1-${maxKeyLength} characters`);
    }
    // A name of an id no longer listed goes: an update of clientIds alone keeps the names.
    const listed = new Set(clientIds);
    const named = keys
      .map(([k, id]) => [k, id.toLowerCase()] as const)
      .filter(([, id]) => listed.has(id));
    out.azure = {
      tenantId: azure.tenantId.toLowerCase(),
      clientIds,
      ...(named.length > 0 ? { clientIdKeys: Object.fromEntries(named) } : {}),
    };
  }
  if (github && only.has("github")) {
    if (github.installationIds.length === 0) {
      v.add("github.installationIds", "at least one installation id is required");
    } else if (github.installationIds.length > maxListLength) {
      v.add("github.installationIds", `must be at most ${maxListLength} ids`);
    } else if (github.installationIds.some((id) => id <= 0n)) {
      v.add("github.installationIds", "each installation id must be a positive integer");
    }
    out.github = { installationIds: github.installationIds.map(String) };
  }
  return out;
}

/** Map a stored association to its API message. */
export function toAccountAssociation(a: AccountAssociationRecord): AccountAssociation {
  return create(AccountAssociationSchema, {
    uid: a.uid,
    name: a.name,
    description: a.description,
    ...(a.amazon ? { amazon: create(AmazonSchema, a.amazon) } : {}),
    ...(a.google ? { google: create(GoogleSchema, a.google) } : {}),
    ...(a.azure ? { azure: create(AzureSchema, a.azure) } : {}),
    ...(a.github
      ? { github: create(GithubSchema, { installationIds: a.github.installationIds.map(BigInt) }) }
      : {}),
    createTime: timestampFromMs(a.createTime),
    updateTime: timestampFromMs(a.updateTime),
  });
}
