import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { type AuditScope, changeScope } from "../events/audit-scope.js";
import type { RepoRecord, TagFilters, TagRecord } from "../store/registry-store.js";
import { type ListQuery, type Store, StoreError } from "../store/store.js";
import { isUid, newChildUid } from "../uid.js";
import { createIgnoredEventsLog } from "./ignored-events-log.js";
import type { RegistryNames } from "./registry-names.js";

/** Options of registryNotificationRoutes. */
export interface NotificationOptions {
  /** The base URL: the endpoint is `{base URL}/registry/notifications`. */
  baseUrl: string;
  /** The bearer secret the registry sends (GATEHOUSE_REGISTRY_NOTIFICATIONS_SECRET). */
  secret: string;
  names: RegistryNames;
  store: Pick<Store, "pushTag" | "deleteTag" | "listTags" | "recording">;
  now: () => number;
  /**
   * Told what was ignored and why: registry names and reasons, never the secret; once per
   * reason and repository a minute (createIgnoredEventsLog).
   */
  log(fields: Record<string, unknown>, msg: string): void;
}

/** Distribution's notification media type. */
export const eventsMediaType = "application/vnd.docker.distribution.events.v1+json";
/**
 * The largest envelope taken, refused (413) while it is read, before any parse: distribution
 * 2.8 sends one event an envelope (about 1 KiB), so this leaves room for batching senders
 * while a flood of big envelopes costs a quarter of what 1 MiB ones did.
 */
export const maxEnvelopeBytes = 256 * 1024;
const tagPattern = /^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$/;
const digestPattern = /^sha256:[0-9a-f]{64}$/;

interface RegistryEvent {
  action?: unknown;
  id?: unknown;
  /** Who pushed: the registry token's subject, a Gatehouse identity uid. */
  actor?: { name?: unknown };
  timestamp?: unknown;
  target?: { repository?: unknown; tag?: unknown; digest?: unknown };
}

const hashOf = (s: string) => createHash("sha256").update(s).digest();

function tagsQuery(repoUid: string, name: string | undefined, filters: TagFilters) {
  const q: ListQuery<TagFilters> = {
    childrenOf: repoUid,
    filters,
    order: { field: "uid", desc: false },
    skip: 0,
    limit: 1000,
  };
  if (name !== undefined) q.name = name;
  return q;
}

/**
 * Serve `POST {base URL}/registry/notifications`: distribution's notification envelope, so
 * that Tags follow the registry. A push of a tagged manifest creates the tag or moves it to
 * the pushed digest (updateTime: the event's time); a delete removes the tag named, or every
 * tag of the deleted digest. Redelivered and out-of-order events change nothing: a push of
 * the digest the tag already has, or an event older than the tag's last move, is skipped.
 * Events for unknown repos or of no interest are logged and acknowledged, never refused (the
 * registry would retry them forever). Only a caller with the bearer secret gets this far:
 * the secret is checked before the body is read, in constant time.
 */
export const registryNotificationRoutes: FastifyPluginAsync<NotificationOptions> = async (
  app,
  opts,
) => {
  const path = `${new URL(opts.baseUrl).pathname.replace(/\/$/, "")}/registry/notifications`;
  const expected = hashOf(`Bearer ${opts.secret}`);
  const { store, names, now } = opts;
  const ignored = createIgnoredEventsLog({ log: opts.log, now });

  for (const type of [eventsMediaType, "application/json"]) {
    app.addContentTypeParser(
      type,
      { parseAs: "string", bodyLimit: maxEnvelopeBytes },
      (_req, body, done) => {
        try {
          done(null, JSON.parse(body as string));
        } catch {
          done(Object.assign(new Error("the body is not JSON"), { statusCode: 400 }), undefined);
        }
      },
    );
  }

  // Before the body is read: a stranger's request costs a hash, not a parse.
  const authorize = async (req: FastifyRequest, reply: FastifyReply) => {
    const given = req.headers.authorization;
    // Both sides hashed: equal lengths for timingSafeEqual, and no length leak.
    if (typeof given !== "string" || !timingSafeEqual(hashOf(given), expected)) {
      return reply
        .code(401)
        .header("www-authenticate", 'Bearer realm="registry notifications"')
        .header("content-type", "application/json")
        .send(
          JSON.stringify({
            error: "unauthorized",
            error_description: "the notification secret is required as the bearer",
          }),
        );
    }
  };

  async function tagsOf(repo: RepoRecord, name: string | undefined, filters: TagFilters = {}) {
    return (await store.listTags(tagsQuery(repo.uid, name, filters))).items;
  }

  // The change of the registry event being applied is recorded with it (`tagScope`), as the
  // RPCs' changes are.
  type ScopeOf = (verb: string) => AuditScope;

  // Whether the push creates or moves the tag, or changes nothing (a redelivery, a stale
  // event), is decided in the store's transaction and names the event: two concurrent pushes
  // of a new tag record one creation and one move (or nothing), never two creations.
  async function onPush(
    repo: RepoRecord,
    tag: string,
    digest: string,
    time: number,
    tagScope: ScopeOf,
  ) {
    await store
      .recording(tagScope("created"))
      .pushTag(
        repo.uid,
        { name: tag, digest, deprecated: false },
        () => newChildUid(repo.uid),
        time,
      );
  }

  async function onDelete(
    repo: RepoRecord,
    tag: string | undefined,
    digest: string | undefined,
    tagScope: ScopeOf,
  ) {
    let doomed: TagRecord[] = [];
    if (tag !== undefined) doomed = await tagsOf(repo, tag);
    else if (digest !== undefined) doomed = await tagsOf(repo, undefined, { digest });
    for (const t of doomed) {
      if (digest !== undefined && t.digest !== digest) continue;
      try {
        await store.recording(tagScope("deleted")).deleteTag(t.uid);
      } catch (err) {
        // Deleted meanwhile (a redelivery racing the first delivery): the goal is reached.
        if (!(err instanceof StoreError && err.kind === "not_found")) throw err;
      }
    }
  }

  async function apply(
    event: RegistryEvent,
    resolve: (repository: string) => Promise<RepoRecord | undefined>,
  ) {
    const target = event.target ?? {};
    const { action } = event;
    if (action !== "push" && action !== "delete") return;
    const repository = typeof target.repository === "string" ? target.repository : "";
    const tag = typeof target.tag === "string" && target.tag !== "" ? target.tag : undefined;
    const digest =
      typeof target.digest === "string" && target.digest !== "" ? target.digest : undefined;
    // A push without a tag is a blob or a manifest by digest: no tag moves.
    if (action === "push" && tag === undefined) return;
    if (
      (tag !== undefined && !tagPattern.test(tag)) ||
      (digest !== undefined && !digestPattern.test(digest)) ||
      (action === "push" && digest === undefined)
    ) {
      ignored.ignored("bad tag or digest", repository, { action });
      return;
    }
    const repo = await resolve(repository);
    if (!repo) {
      ignored.ignored("no such repo", repository, { action });
      return;
    }
    const pusher = typeof event.actor?.name === "string" ? event.actor.name : "";
    const eventId = typeof event.id === "string" ? event.id.slice(0, 100) : "";
    const tagScope: ScopeOf = (verb) =>
      changeScope({
        type: `dev.gatehouse.registry.tag.${verb}.v1`,
        // A push's event is named by what it did (Store.pushTag's outcome).
        outcomeTypes: {
          created: "dev.gatehouse.registry.tag.created.v1",
          updated: "dev.gatehouse.registry.tag.updated.v1",
        },
        source: "/registry/notifications",
        requestId: eventId,
        protocol: "registry",
        ...(isUid(pusher) ? { actorUid: pusher } : { operator: "registry" }),
      });
    const parsed = typeof event.timestamp === "string" ? Date.parse(event.timestamp) : Number.NaN;
    const time = Number.isFinite(parsed) ? parsed : now();
    try {
      if (action === "push") await onPush(repo, tag!, digest!, time, tagScope);
      else await onDelete(repo, tag, digest, tagScope);
    } catch (err) {
      // The repo went away meanwhile: as if unknown.
      if (!(err instanceof StoreError && err.kind === "not_found")) throw err;
      ignored.ignored("the repo is gone", repository, { action });
    }
  }

  app.post(path, { onRequest: authorize }, async (req, reply) => {
    const events = (req.body as { events?: unknown } | undefined)?.events;
    if (!Array.isArray(events)) {
      return reply
        .code(400)
        .header("content-type", "application/json")
        .send(
          JSON.stringify({
            error: "invalid_request",
            error_description: `the body must be a notification envelope ({"events": [...]}, ${eventsMediaType})`,
          }),
        );
    }
    // One resolution per repository an envelope names, however many of its events name it.
    const repos = new Map<string, Promise<RepoRecord | undefined>>();
    const resolve = (repository: string) => {
      let repo = repos.get(repository);
      if (!repo) {
        repo = names.resolve(repository);
        repos.set(repository, repo);
      }
      return repo;
    };
    for (const event of events) {
      if (typeof event === "object" && event !== null) {
        await apply(event as RegistryEvent, resolve);
      }
    }
    return reply.header("content-type", "application/json").send("{}");
  });
};
