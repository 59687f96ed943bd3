import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ListReposResponseSchema,
  type Repo,
  RepoSchema,
  type ReposService,
} from "../../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import { storeOf } from "../../call-store.js";
import type { Config } from "../../config.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import { createRegistryNames } from "../../registry/registry-names.js";
import type { RepoPatch, RepoRecord } from "../../store/registry-store.js";
import { repos } from "../../store/rows/repo-rows.js";
import type { Store } from "../../store/store.js";
import { newChildUid } from "../../uid.js";
import {
  checkDescription,
  checkUid,
  labelsPatch,
  violations,
} from "../../validation/field-rules.js";
import { checkRepoAliases, checkRepoName } from "../../validation/registry-rules.js";
import { listOptionsOf } from "../caller.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { updateRequest } from "../update-mask.js";

/** The fields a List of repos may be ordered by: its message's scalars that a column keeps. */
const reposSorts = sortFieldsOf(RepoSchema, repos.listColumns);

/** What the repos service needs. */
export interface ReposDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  /** registryService: the registry host of pull references ("" for none). */
  config: Pick<Config, "registryService">;
}

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(RepoSchema);

/**
 * Create the ReposService: container repositories in groups. Authorization (repo.list,
 * repo.create, repo.update, repo.delete at the repo's group) is the access interceptor's.
 */
export function createReposService(deps: ReposDeps): ServiceImpl<typeof ReposService> {
  const { store, lists, now } = deps;
  const host = deps.config.registryService;
  // A repo's message with its pull reference, computed by the token endpoint's own naming
  // rule so API, CLI and console show exactly the name the registry accepts. One namer per
  // request: it memoizes group names.
  const withReference = async (repos: RepoRecord[]): Promise<Repo[]> => {
    if (host === "") return repos.map((r) => toRepo(r));
    const names = createRegistryNames(store);
    const out: Repo[] = [];
    for (const r of repos) {
      const name = await names.nameOf(r);
      out.push(toRepo(r, name === undefined ? "" : `${host}/${name}`));
    }
    return out;
  };
  const one = async (r: RepoRecord) => (await withReference([r]))[0]!;
  return {
    async listRepos(req, ctx) {
      const query = lists.parse(req, {}, { ...listOptionsOf(ctx), sort: reposSorts });
      const { items, ...envelope } = lists.finish(query, await store.listRepos(query), sortValueOf);
      return create(ListReposResponseSchema, { repos: await withReference(items), ...envelope });
    },

    async getRepo(req) {
      return one(await requireFound("repo", req.uid, (uid) => store.getRepo(uid)));
    },

    async createRepo(req, ctx) {
      const store = storeOf(ctx);
      const body = req.repo ?? create(RepoSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkRepoName(v, "name", body.name);
      checkDescription(v, "description", body.description);
      checkRepoAliases(v, "aliases", body.aliases);
      v.throwIfAny();
      const repo = await store.createRepo({
        uid: newChildUid(req.parent),
        groupUid: req.parent,
        name: body.name,
        description: body.description,
        aliases: body.aliases,
        public: body.public,
        now: now(),
      });
      return one(repo);
    },

    async updateRepo(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.repo, req.updateMask);
      const patch: RepoPatch = labelsPatch(v, fields, body, checkRepoName);
      if (fields.has("aliases")) {
        checkRepoAliases(v, "aliases", body.aliases);
        patch.aliases = body.aliases;
      }
      if (fields.has("public")) patch.public = body.public;
      v.throwIfAny();
      return one(await store.updateRepo(body.uid, patch, now()));
    },

    async deleteRepo(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      await store.deleteRepo(req.uid);
      return {};
    },
  };
}

/** Map a stored repo to its API message; `pullReference` is computed by the service. */
export function toRepo(r: RepoRecord, pullReference = ""): Repo {
  return create(RepoSchema, {
    uid: r.uid,
    pullReference,
    name: r.name,
    description: r.description,
    aliases: r.aliases,
    public: r.public,
    createTime: timestampFromMs(r.createTime),
    updateTime: timestampFromMs(r.updateTime),
  });
}
