import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type RegistryService,
  type Repo,
  RepoListSchema,
  RepoSchema,
  type Tag,
  TagListSchema,
  TagSchema,
} from "../../../gen/gatehouse/registry/v1/registry_pb.js";
import {
  type Repo as V2Repo,
  ReposService as V2ReposService,
} from "../../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import {
  type Tag as V2Tag,
  TagsService as V2TagsService,
} from "../../../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { invalidField } from "../../errors.js";
import { parentOf } from "../../uid.js";
import { collectPages, listOrGet, uidpKeeps, v2Uidp } from "./v1-list.js";
import type { V1Deps } from "./v2-calls.js";

const repos = V2ReposService.method;
const tags = V2TagsService.method;
// v1's tag name filters: a date suffix and an epoch suffix.
const dateSuffix = /-20\d{6}$/;
const epochSuffix = /-r\d+$/;

/** Create the v1 RegistryService, an adapter over the v2 ReposService and TagsService. */
export function createV1RegistryService({
  v2: calls,
}: V1Deps): ServiceImpl<typeof RegistryService> {
  // A PUT replaces what v1 shows; `public`, which it does not, is kept.
  const replaceRepo = async (uid: string, r: Repo, ctx: HandlerContext) =>
    calls.call(
      repos.updateRepo,
      {
        repo: { uid, name: r.name, description: r.description, aliases: r.aliases },
        updateMask: { paths: ["name", "description", "aliases"] },
      },
      ctx,
    );
  return {
    async createRepo(req, ctx) {
      const body = req.repo ?? create(RepoSchema);
      const repo = { name: body.name, description: body.description, aliases: body.aliases };
      try {
        return toV1Repo(await calls.call(repos.createRepo, { parent: req.parentId, repo }, ctx));
      } catch (err) {
        // v1 creates or replaces: the repo of that name in that group takes the new fields.
        if (
          req.preventExisting ||
          !(err instanceof ConnectError) ||
          err.code !== Code.AlreadyExists
        ) {
          throw err;
        }
        const [existing] = await collectPages("repos", async (pageSize, pageToken) => {
          const page = await calls.call(
            repos.listRepos,
            {
              uidp: { descendantsOf: "", childrenOf: req.parentId },
              name: body.name,
              pageSize,
              pageToken,
            },
            ctx,
          );
          return { items: page.repos, nextPageToken: page.nextPageToken };
        });
        if (!existing) throw err;
        return toV1Repo(await replaceRepo(existing.uid, body, ctx));
      }
    },

    async updateRepo(req, ctx) {
      return toV1Repo(await replaceRepo(req.id, req, ctx));
    },

    async listRepos(req, ctx) {
      const items = await listOrGet({
        what: "repos",
        id: req.id,
        get: (uid) => calls.call(repos.getRepo, { uid }, ctx),
        page: async (pageSize, pageToken) => {
          const page = await calls.call(
            repos.listRepos,
            { uidp: v2Uidp(req.uidp), name: req.name, pageSize, pageToken },
            ctx,
          );
          return { items: page.repos, nextPageToken: page.nextPageToken };
        },
        keep: (r) => uidpKeeps(req.uidp, r.uid) && (req.name === "" || r.name === req.name),
      });
      return create(RepoListSchema, { items: items.map(toV1Repo) });
    },

    async deleteRepo(req, ctx) {
      await calls.call(repos.deleteRepo, { uid: req.id }, ctx);
      return {};
    },

    async createTag(req, ctx) {
      const t = req.tag ?? create(TagSchema);
      const made = await calls.call(
        tags.createTag,
        { parent: req.repoId, tag: { name: t.name, digest: t.digest, deprecated: t.deprecated } },
        ctx,
      );
      return toV1Tag(made);
    },

    async updateTag(req, ctx) {
      // v2 moves a tag by creating it again under its name: a v1 Update is that move. The
      // name stays (another name would be another tag); a digest left out stays too.
      const current = await calls.call(tags.getTag, { uid: req.id }, ctx);
      if (req.name !== "" && req.name !== current.name) {
        throw invalidField("name", "a tag's name cannot change; create a tag of the new name");
      }
      const moved = await calls.call(
        tags.createTag,
        {
          parent: parentOf(req.id),
          tag: {
            name: current.name,
            digest: req.digest || current.digest,
            deprecated: req.deprecated,
          },
        },
        ctx,
      );
      return toV1Tag(moved);
    },

    async deleteTag(req, ctx) {
      await calls.call(tags.deleteTag, { uid: req.id }, ctx);
      return {};
    },

    async listTags(req, ctx) {
      const keep = (t: V2Tag) =>
        uidpKeeps(req.uidp, t.uid) &&
        (req.name === "" || t.name === req.name) &&
        (req.digest === "" || t.digest === req.digest) &&
        !(req.excludeReferrers && t.name.startsWith("sha256-")) &&
        !(req.excludeDates && dateSuffix.test(t.name)) &&
        !(req.excludeEpochs && epochSuffix.test(t.name));
      const items = await listOrGet({
        what: "tags",
        id: req.id,
        get: (uid) => calls.call(tags.getTag, { uid }, ctx),
        page: async (pageSize, pageToken) => {
          const page = await calls.call(
            tags.listTags,
            {
              uidp: v2Uidp(req.uidp),
              name: req.name,
              digest: req.digest,
              excludeReferrers: req.excludeReferrers,
              ...(req.updatedSince ? { updatedSince: req.updatedSince } : {}),
              pageSize,
              pageToken,
            },
            ctx,
          );
          return { items: page.tags, nextPageToken: page.nextPageToken };
        },
        keep,
      });
      return create(TagListSchema, { items: items.map(toV1Tag) });
    },
  };
}

/** A v2 repo in v1's shape. */
function toV1Repo(r: V2Repo): Repo {
  return create(RepoSchema, {
    id: r.uid,
    name: r.name,
    description: r.description,
    aliases: r.aliases,
    createTime: r.createTime,
  });
}

/** A v2 tag in v1's shape. */
function toV1Tag(t: V2Tag): Tag {
  return create(TagSchema, {
    id: t.uid,
    name: t.name,
    digest: t.digest,
    deprecated: t.deprecated,
    lastUpdated: t.updateTime,
  });
}
