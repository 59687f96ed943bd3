import type { Database } from "better-sqlite3";
import { parentOf } from "../../uid.js";
import type { IdentityPatch, NewIdentity, PersonLogin } from "../iam-store.js";
import { isEmptyPatch } from "../patch.js";
import {
  type IdentityRow,
  identityListColumns,
  identityRecordOf,
  methodColumns,
} from "../rows/identity-rows.js";
import { StoreError } from "../store.js";
import type { LastOwnerGuard } from "./last-owner.js";
import { createListSql } from "./list-sql.js";
import type { ReadCache } from "./read-cache.js";
import type { SyncOps } from "./sync-ops.js";

/** The identity operations of the SQLite store. */
export type IdentityOps = SyncOps<
  | "createIdentity"
  | "getIdentity"
  | "updateIdentity"
  | "deleteIdentity"
  | "listIdentities"
  | "touchIdentity"
  | "upsertPerson"
>;

/** Create the identity operations on an open, migrated database. */
export function createIdentityOps(
  db: Database,
  lastOwner: LastOwnerGuard,
  cache: Pick<ReadCache, "unseen">,
): IdentityOps {
  const get = db.prepare("SELECT * FROM identities WHERE uid = ?");
  const groupExists = db.prepare("SELECT 1 FROM groups WHERE uid = ?");
  const insert = db.prepare(
    `INSERT INTO identities (uid, group_uid, name, description, issuer, subject, claim_match,
       static_keys, last_seen_time, create_time, update_time)
     VALUES (@uid, @group, @name, @description, @issuer, @subject, @claimMatch, @staticKeys,
       @now, @now, @now)`,
  );
  const update = db.prepare(
    `UPDATE identities SET name = @name, description = @description, issuer = @issuer,
       subject = @subject, claim_match = @claimMatch, static_keys = @staticKeys,
       update_time = @now
     WHERE uid = @uid`,
  );
  const removeBindings = db.prepare("DELETE FROM role_bindings WHERE identity_uid = ?");
  const remove = db.prepare("DELETE FROM identities WHERE uid = ?");
  const touch = db.prepare("UPDATE identities SET last_seen_time = ? WHERE uid = ?");
  // lastSeenTime changes with every token exchange. Its commit does not wait for the disk
  // (synchronous = NORMAL, for that statement only): in WAL mode it survives a crash of the
  // process, and reaches the disk with the next durable commit or checkpoint; a power loss may
  // forget the latest of these times, never a grant or a revocation. An fsync per exchange
  // capped exchanges at the disk's fsync rate (~1k/s here).
  const durable = db.pragma("synchronous", { simple: true }) as number;
  const relaxed = db.prepare("PRAGMA synchronous = NORMAL");
  const restore = db.prepare(`PRAGMA synchronous = ${durable}`);
  // A person's root identity has no group and no method; a later login refreshes what the
  // issuer says about the person.
  const upsertPerson = db.prepare(
    `INSERT INTO identities (uid, group_uid, name, description, email, issuer, subject,
       last_seen_time, create_time, update_time)
     VALUES (@uid, NULL, @name, '', @email, @issuer, @subject, @now, @now, @now)
     ON CONFLICT (uid) DO UPDATE SET name = excluded.name, email = excluded.email,
       last_seen_time = excluded.last_seen_time, update_time = excluded.update_time
     WHERE group_uid IS NULL`,
  );
  const lists = createListSql<IdentityRow>(db, identityListColumns);

  const find = (uid: string) => get.get(uid) as IdentityRow | undefined;
  const mustFind = (uid: string) => {
    const row = find(uid);
    if (!row) throw new StoreError("not_found", `identity ${JSON.stringify(uid)}`);
    return row;
  };

  return {
    createIdentity: db.transaction((i: NewIdentity) => {
      if (parentOf(i.uid) !== i.groupUid || i.groupUid === "") {
        throw new Error(`identity uid ${i.uid} is not a direct child of ${i.groupUid}`);
      }
      if (!groupExists.get(i.groupUid)) {
        throw new StoreError("not_found", `group ${JSON.stringify(i.groupUid)}`);
      }
      if (find(i.uid)) throw new StoreError("already_exists", `identity ${JSON.stringify(i.uid)}`);
      insert.run({
        uid: i.uid,
        group: i.groupUid,
        name: i.name,
        description: i.description,
        now: i.now,
        ...methodColumns(i.claimMatch, i.staticKeys),
      });
      return identityRecordOf(find(i.uid)!);
    }).immediate,

    getIdentity: (uid) => {
      const row = find(uid);
      return row && identityRecordOf(row);
    },

    updateIdentity: db.transaction((uid: string, patch: IdentityPatch, now: number) => {
      const current = identityRecordOf(mustFind(uid));
      if (isEmptyPatch(patch)) return current;
      const method =
        patch.claimMatch || patch.staticKeys
          ? methodColumns(patch.claimMatch, patch.staticKeys)
          : methodColumns(current.claimMatch, current.staticKeys);
      // A person's issuer and subject come from logins, not from a method.
      const identifying = current.groupUid === "" ? personColumns(mustFind(uid)) : method;
      update.run({
        uid,
        name: patch.name ?? current.name,
        description: patch.description ?? current.description,
        now,
        ...method,
        issuer: identifying.issuer,
        subject: identifying.subject,
      });
      return identityRecordOf(find(uid)!);
    }).immediate,

    deleteIdentity: db.transaction((uid: string) => {
      mustFind(uid);
      lastOwner.identity(uid);
      removeBindings.run(uid);
      remove.run(uid);
    }).immediate,

    listIdentities: (query) => {
      const page = lists.list(query);
      return { items: page.rows.map(identityRecordOf), total: page.total, hasMore: page.hasMore };
    },

    touchIdentity: (uid, time) => {
      relaxed.run();
      let changes: number;
      try {
        // No access answer depends on lastSeenTime: every exchange writes it, and emptying the
        // access cache each time made every exchange slow down the reads beside it.
        changes = cache.unseen(() => touch.run(time, uid).changes);
      } finally {
        restore.run();
      }
      if (changes === 0) throw new StoreError("not_found", `identity ${JSON.stringify(uid)}`);
    },

    upsertPerson: db.transaction((p: PersonLogin) => {
      if (parentOf(p.uid) !== "") throw new Error(`person uid ${p.uid} is not a root uid`);
      upsertPerson.run({
        uid: p.uid,
        name: p.name,
        email: p.email,
        issuer: p.issuer,
        subject: p.subject,
        now: p.now,
      });
      return identityRecordOf(find(p.uid)!);
    }).immediate,
  };
}

function personColumns(row: IdentityRow) {
  return { issuer: row.issuer, subject: row.subject };
}
