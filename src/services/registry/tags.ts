import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ListTagsResponseSchema,
  type Tag,
  TagSchema,
  type TagsService,
} from "../../../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { storeOf } from "../../call-store.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import type { TagFilters, TagRecord } from "../../store/registry-store.js";
import { tags } from "../../store/rows/tag-rows.js";
import type { Store } from "../../store/store.js";
import { newChildUid } from "../../uid.js";
import { checkUid, violations } from "../../validation/field-rules.js";
import { checkDigest, checkTagName } from "../../validation/registry-rules.js";
import { listOptionsOf } from "../caller.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";

/** The fields a List of tags may be ordered by: its message's scalars that a column keeps. */
const tagsSorts = sortFieldsOf(TagSchema, tags.listColumns);

/** What the tags service needs. */
export interface TagsDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
}

/**
 * Create the TagsService: the tags of a repo, one per name. There is no Update: creating an
 * existing name moves the tag to the new digest and refreshes its updateTime. Authorization
 * (tag.list, tag.create, tag.delete at the repo's group) is the access interceptor's.
 */
export function createTagsService(deps: TagsDeps): ServiceImpl<typeof TagsService> {
  const { store, lists, now } = deps;
  return {
    async listTags(req, ctx) {
      const filters: TagFilters = {};
      if (req.digest !== "") {
        const v = violations();
        checkDigest(v, "digest", req.digest);
        v.throwIfAny();
        filters.digest = req.digest;
      }
      if (req.updatedSince) filters.updatedSince = timestampDate(req.updatedSince).getTime();
      if (req.excludeReferrers) filters.excludeReferrers = true;
      const query = lists.parse(req, filters, { ...listOptionsOf(ctx), sort: tagsSorts });
      const { items, ...envelope } = lists.finish(query, await store.listTags(query), sortValueOf);
      return create(ListTagsResponseSchema, { tags: items.map(toTag), ...envelope });
    },

    async getTag(req) {
      return toTag(await requireFound("tag", req.uid, (uid) => store.getTag(uid)));
    },

    async createTag(req, ctx) {
      const store = storeOf(ctx);
      const body = req.tag ?? create(TagSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkTagName(v, "name", body.name);
      checkDigest(v, "digest", body.digest);
      v.throwIfAny();
      const { tag } = await store.putTag(
        req.parent,
        { name: body.name, digest: body.digest, deprecated: body.deprecated },
        () => newChildUid(req.parent),
        now(),
      );
      return toTag(tag);
    },

    async deleteTag(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      await store.deleteTag(req.uid);
      return {};
    },
  };
}

/** Map a stored tag to its API message. */
export function toTag(t: TagRecord): Tag {
  return create(TagSchema, {
    uid: t.uid,
    name: t.name,
    digest: t.digest,
    deprecated: t.deprecated,
    createTime: timestampFromMs(t.createTime),
    updateTime: timestampFromMs(t.updateTime),
  });
}
