import { parentOf } from "../../uid.js";
import type { IdentityPatch, NewIdentity, PersonLogin } from "../iam-store.js";
import { isEmptyPatch } from "../patch.js";
import {
  type IdentityRow,
  identities,
  identityRecordOf,
  methodColumns,
} from "../rows/identity-rows.js";
import { insertRow, updateStored } from "../rows/resource.js";
import { notFoundError, StoreError } from "../store.js";
import type { LastOwnerGuard } from "./last-owner.js";
import { mustExist } from "./must-exist.js";
import {
  exists,
  found,
  list,
  lookup,
  type OpsOf,
  one,
  read,
  run,
  type Steps,
  write,
} from "./operation.js";

const selectIdentity = identities.select;

function* find(uid: string): Steps<IdentityRow | undefined> {
  return yield* one<IdentityRow>(selectIdentity, uid);
}

const mustFind = (uid: string) => found<IdentityRow>("identity", selectIdentity, uid);

/** The identity operations of both backends. */
export function createIdentityOps(lastOwner: LastOwnerGuard) {
  return {
    createIdentity: write(function* (i: NewIdentity) {
      if (parentOf(i.uid) !== i.groupUid || i.groupUid === "") {
        throw new Error(`identity uid ${i.uid} is not a direct child of ${i.groupUid}`);
      }
      yield* mustExist("group", i.groupUid);
      if (yield* find(i.uid)) {
        throw new StoreError("already_exists", `identity ${JSON.stringify(i.uid)}`);
      }
      const m = methodColumns(i.claimMatch, i.staticKeys);
      const row = yield* insertRow(identities, {
        uid: i.uid,
        group_uid: i.groupUid,
        name: i.name,
        description: i.description,
        // A person's email comes from their logins (upsertPerson); an identity in a group has none.
        email: "",
        issuer: m.issuer,
        subject: m.subject,
        claim_match: m.claimMatch,
        static_keys: m.staticKeys,
        last_seen_time: i.now,
        create_time: i.now,
        update_time: i.now,
      });
      return identityRecordOf(row);
    }),

    getIdentity: lookup(selectIdentity, identityRecordOf),

    updateIdentity: write(function* (uid: string, patch: IdentityPatch, now: number) {
      const row = yield* mustFind(uid);
      const current = identityRecordOf(row);
      if (isEmptyPatch(patch)) return current;
      const method =
        patch.claimMatch || patch.staticKeys
          ? methodColumns(patch.claimMatch, patch.staticKeys)
          : methodColumns(current.claimMatch, current.staticKeys);
      // A person's issuer and subject come from logins, not from a method.
      const identifying = current.groupUid === "" ? row : method;
      const updated = yield* updateStored(identities, uid, {
        name: patch.name ?? current.name,
        description: patch.description ?? current.description,
        issuer: identifying.issuer,
        subject: identifying.subject,
        claim_match: method.claimMatch,
        static_keys: method.staticKeys,
        update_time: now,
      });
      return identityRecordOf(updated);
    }),

    deleteIdentity: write(function* (uid: string) {
      yield* mustFind(uid);
      yield* lastOwner.identity(uid);
      yield* run("DELETE FROM role_bindings WHERE identity_uid = ?", uid);
      yield* run("DELETE FROM identities WHERE uid = ?", uid);
    }),

    listIdentities: list(identities.listColumns, identityRecordOf),

    upsertPerson: write(function* (p: PersonLogin) {
      if (parentOf(p.uid) !== "") throw new Error(`person uid ${p.uid} is not a root uid`);
      // A person's root identity has no group and no method; a later login refreshes what the
      // issuer says about the person.
      yield* run(
        `INSERT INTO identities (uid, group_uid, name, description, email, issuer, subject,
           last_seen_time, create_time, update_time)
         VALUES (?, NULL, ?, '', ?, ?, ?, ?, ?, ?)
         ON CONFLICT (uid) DO UPDATE SET name = excluded.name, email = excluded.email,
           last_seen_time = excluded.last_seen_time, update_time = excluded.update_time
         WHERE identities.group_uid IS NULL`,
        p.uid,
        p.name,
        p.email,
        p.issuer,
        p.subject,
        p.now,
        p.now,
        p.now,
      );
      return identityRecordOf((yield* find(p.uid))!);
    }),

    // Every authenticated call asks: each store memoizes it in its access cache (access.ts).
    identityExists: read(function* (uid: string) {
      return yield* exists("SELECT 1 FROM identities WHERE uid = ?", uid);
    }),

    // lastSeenTime changes with every token exchange. Its commit need not wait for the disk
    // (relaxedDurability): a power loss may forget the latest of these times, never a grant or
    // a revocation, where an fsync per exchange capped exchanges at the disk's fsync rate (~1k/s
    // on SQLite). It commits on its own (ownCommit), as one statement (autocommit), and no access
    // answer depends on it: emptying the access caches each time slowed every read beside it.
    touchIdentity: write(
      function* (uid: string, time: number) {
        const changed = yield* run(
          "UPDATE identities SET last_seen_time = ? WHERE uid = ?",
          time,
          uid,
        );
        if (changed === 0) throw notFoundError("identity", uid);
      },
      {
        accessNeutral: true,
        ownCommit: true,
        autocommit: true,
        relaxedDurability: true,
        // Upkeep of every exchange, no change an event records.
        bookkeeping: true,
      },
    ),
  } satisfies OpsOf<
    | "createIdentity"
    | "getIdentity"
    | "updateIdentity"
    | "deleteIdentity"
    | "listIdentities"
    | "upsertPerson"
    | "identityExists"
    | "touchIdentity"
  >;
}
