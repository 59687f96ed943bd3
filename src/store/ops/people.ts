import { rootOf } from "../../uid.js";
import type { RoleBindingRecord } from "../iam-store.js";
import type {
  PeopleFilters,
  PersonOrigin,
  PersonOriginKind,
  PersonRecord,
  PersonTeam,
  SessionRecord,
  SessionsRevoked,
} from "../people-store.js";
import { type BindingRow, roleBindingRecordOf } from "../rows/role-binding-rows.js";
import { notFoundError } from "../store.js";
import type { ListPage, ListQuery, SortField } from "../vocabulary.js";
import {
  exists,
  type OpsOf,
  one,
  type Param,
  read,
  rows,
  run,
  type Steps,
  type Text,
  write,
} from "./operation.js";

interface PersonRow {
  uid: string;
  name: string;
  email: string;
  issuer: string;
  subject: string;
  last_seen_time: number;
  create_time: number;
  update_time: number;
}

interface OriginRow {
  kind: PersonOriginKind;
  group_uid: string;
  source_uid: string;
  create_time: number;
}

// `column` is `group` or below it. Uids are paths (a child's uid is its parent's plus
// `/<segment>`), so a prefix compare finds the subtree on both backends without the closure.
function subtree(column: string, group: string): { sql: string; params: Param[] } {
  return {
    sql: `(${column} = ? OR substr(${column}, 1, ?) = ?)`,
    params: [group, group.length + 1, `${group}/`],
  };
}

/**
 * The people of `group`: persons (no group of their own) bound at or below it, themselves or
 * through a team they are a member of; members of a team that lives at or below it (being in
 * one of its teams is being in the organization, as AddTeamMembers has it), bound or not; and
 * those who came in through an identity provider at or below it, bound or not. Each way is
 * one EXISTS, so a person who qualifies several ways is counted once.
 */
function peopleOf(group: string): { sql: string; params: Param[] } {
  const bound = subtree("b.group_uid", group);
  const teamBound = subtree("tb.group_uid", group);
  const teamLives = subtree("m.team_uid", group);
  const came = subtree("o.group_uid", group);
  return {
    sql: `i.group_uid IS NULL AND (
      EXISTS (SELECT 1 FROM role_bindings AS b WHERE b.identity_uid = i.uid AND ${bound.sql})
      OR EXISTS (SELECT 1 FROM team_members AS m
        WHERE m.identity_uid = i.uid AND (${teamLives.sql} OR EXISTS (
          SELECT 1 FROM role_bindings AS tb WHERE tb.team_uid = m.team_uid AND ${teamBound.sql})))
      OR EXISTS (SELECT 1 FROM person_origins AS o WHERE o.identity_uid = i.uid
        AND o.kind = 'identity_provider' AND ${came.sql}))`,
    params: [...bound.params, ...teamLives.params, ...teamBound.params, ...came.params],
  };
}

/** The most teams, and the most role bindings, a person's record carries. */
const maxTeams = 100;
const maxBindings = 100;

/**
 * A statement about the people of a page: `build` gets how to say that a column is one of the
 * page's uids (one `?`, bound to the uid list: JSON text on SQLite, an array on PostgreSQL).
 */
function aboutPage(build: (isOne: (column: string) => string) => string): Text {
  return {
    sqlite: build((c) => `${c} IN (SELECT value FROM json_each(?))`),
    pg: build((c) => `${c} = ANY(?::text[])`),
  };
}

// The teams of the page's people that live at or below `group` (a team's uid is a child of
// its group's) or that hold a role there, the teams the people view of `group` may name:
// at most maxTeams a person, by name.
function* teamsOf(uids: string[], group: string): Steps<Map<string, PersonTeam[]>> {
  const lives = subtree("t.uid", group);
  const bound = subtree("tb.group_uid", group);
  const found = yield* rows<{ identity_uid: string; uid: string; name: string }>(
    aboutPage(
      (isOne) => `SELECT x.identity_uid, x.uid, x.name FROM (
        SELECT m.identity_uid, t.uid, t.name,
          ROW_NUMBER() OVER (PARTITION BY m.identity_uid ORDER BY t.name, t.uid) AS n
        FROM team_members AS m JOIN teams AS t ON t.uid = m.team_uid
        WHERE ${isOne("m.identity_uid")} AND (${lives.sql} OR EXISTS (
          SELECT 1 FROM role_bindings AS tb WHERE tb.team_uid = t.uid AND ${bound.sql}))
      ) AS x WHERE x.n <= ${maxTeams} ORDER BY x.identity_uid, x.n`,
    ),
    uids,
    ...lives.params,
    ...bound.params,
  );
  const out = new Map<string, PersonTeam[]>();
  for (const r of found) push(out, r.identity_uid, { uid: r.uid, name: r.name });
  return out;
}

// The role bindings the page's people hold at or below `group`, their own and their teams':
// at most maxBindings a person, by create time (as ListRoleBindings orders them).
function* bindingsOf(uids: string[], group: string): Steps<Map<string, RoleBindingRecord[]>> {
  const at = subtree("v.group_uid", group);
  const found = yield* rows<BindingRow & { holder: string }>(
    aboutPage(
      (isOne) => `SELECT x.* FROM (
        SELECT h.holder, v.*,
          ROW_NUMBER() OVER (PARTITION BY h.holder ORDER BY v.create_time, v.uid) AS n
        FROM (SELECT b.identity_uid AS holder, b.uid AS binding FROM role_bindings AS b
                WHERE ${isOne("b.identity_uid")}
              UNION SELECT m.identity_uid, b.uid FROM team_members AS m
                JOIN role_bindings AS b ON b.team_uid = m.team_uid
                WHERE ${isOne("m.identity_uid")}) AS h
          JOIN role_bindings_view AS v ON v.uid = h.binding
        WHERE ${at.sql}
      ) AS x WHERE x.n <= ${maxBindings} ORDER BY x.holder, x.n`,
    ),
    uids,
    uids,
    ...at.params,
  );
  const out = new Map<string, RoleBindingRecord[]>();
  for (const r of found) push(out, r.holder, roleBindingRecordOf(r));
  return out;
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** A LIKE pattern for text contained anywhere, `\` escaping the wildcards. */
function containing(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function searchOf(search: string): { sql: string; params: Param[] } {
  if (search === "") return { sql: "", params: [] };
  const like = containing(search);
  return {
    sql: ` AND (lower(i.name) LIKE ? ESCAPE '\\' OR lower(i.email) LIKE ? ESCAPE '\\')`,
    params: [like, like],
  };
}

const sortColumns: Record<SortField, string> = {
  name: "i.name",
  create_time: "i.create_time",
  update_time: "i.update_time",
  uid: "i.uid",
};

const personColumns = `i.uid, i.name, i.email, i.issuer, i.subject, i.last_seen_time,
  i.create_time, i.update_time`;

// The first recorded way of each of the page's people into the organization of `group` (the
// organization, not the group: how someone came is the organization's story, wherever they
// are bound now).
function* originsOf(uids: string[], group: string): Steps<Map<string, PersonOrigin>> {
  const inOrg = subtree("o.group_uid", rootOf(group));
  const found = yield* rows<OriginRow & { identity_uid: string }>(
    aboutPage(
      (isOne) => `SELECT o.identity_uid, o.kind, o.group_uid, o.source_uid, o.create_time
        FROM person_origins AS o WHERE ${isOne("o.identity_uid")} AND ${inOrg.sql}
        ORDER BY o.identity_uid, o.create_time, o.kind`,
    ),
    uids,
    ...inOrg.params,
  );
  const out = new Map<string, PersonOrigin>();
  for (const r of found) {
    if (out.has(r.identity_uid)) continue;
    out.set(r.identity_uid, {
      kind: r.kind,
      groupUid: r.group_uid,
      sourceUid: r.source_uid,
      createTime: r.create_time,
    });
  }
  return out;
}

// The records of a page of people: three statements, whatever the page's size.
function* recordsOf(found: PersonRow[], group: string): Steps<PersonRecord[]> {
  if (found.length === 0) return [];
  const uids = found.map((r) => r.uid);
  const origins = yield* originsOf(uids, group);
  const teams = yield* teamsOf(uids, group);
  const bindings = yield* bindingsOf(uids, group);
  return found.map((row) => {
    const origin = origins.get(row.uid);
    return {
      uid: row.uid,
      name: row.name,
      email: row.email,
      issuer: row.issuer,
      subject: row.subject,
      lastSeenTime: row.last_seen_time,
      createTime: row.create_time,
      updateTime: row.update_time,
      teams: teams.get(row.uid) ?? [],
      roleBindings: bindings.get(row.uid) ?? [],
      ...(origin ? { origin } : {}),
    };
  });
}

// A session is live while it is not revoked and its code or a refresh token is unexpired
// (what the sign-in purge keeps, sign-in-upkeep.ts).
const liveSession = `s.revoke_time IS NULL AND (
  EXISTS (SELECT 1 FROM oauth_refresh_tokens AS t WHERE t.session_id = s.id AND t.expire_time > ?)
  OR EXISTS (SELECT 1 FROM oauth_codes AS c WHERE c.session_id = s.id AND c.expire_time > ?))`;

/**
 * The people view's operations, both backends. Ending sessions is access-neutral as a
 * sign-out is: no access answer depends on a session (each call reads whether its session is
 * live, uncached: sessionActive), so it takes effect at once on every replica.
 */
export const peopleOps = {
  listPeople: read(
    function* (q: ListQuery<PeopleFilters>): Steps<ListPage<PersonRecord>> {
      const { group, search } = q.filters;
      const of = peopleOf(group);
      const text = searchOf(search);
      const where = `${of.sql}${text.sql}`;
      const params = [...of.params, ...text.params];
      const counted = yield* one<{ n: number | string }>(
        `SELECT count(*) AS n FROM identities AS i WHERE ${where}`,
        ...params,
      );
      const col = sortColumns[q.order.field];
      const dir = q.order.desc ? "DESC" : "ASC";
      const cmp = q.order.desc ? "<" : ">";
      let after = "";
      const afterParams: Param[] = [];
      if (q.after) {
        if (q.order.field === "uid") {
          after = ` AND i.uid ${cmp} ?`;
          afterParams.push(q.after.uid);
        } else {
          after = ` AND (${col} ${cmp} ? OR (${col} = ? AND i.uid ${cmp} ?))`;
          afterParams.push(q.after.value, q.after.value, q.after.uid);
        }
      }
      const order = q.order.field === "uid" ? `i.uid ${dir}` : `${col} ${dir}, i.uid ${dir}`;
      const found = yield* rows<PersonRow>(
        `SELECT ${personColumns} FROM identities AS i WHERE ${where}${after}
         ORDER BY ${order} LIMIT ? OFFSET ?`,
        ...params,
        ...afterParams,
        q.limit + 1,
        q.skip,
      );
      const items = yield* recordsOf(found.slice(0, q.limit), group);
      return { items, total: Number(counted?.n ?? 0), hasMore: found.length > q.limit };
    },
    { snapshot: true },
  ),

  getPerson: read(
    function* (group: string, uid: string): Steps<PersonRecord | undefined> {
      const of = peopleOf(group);
      const row = yield* one<PersonRow>(
        `SELECT ${personColumns} FROM identities AS i WHERE i.uid = ? AND ${of.sql}`,
        uid,
        ...of.params,
      );
      return row && (yield* recordsOf([row], group))[0];
    },
    { snapshot: true },
  ),

  notePersonOrigin: write(
    function* (identityUid: string, o: PersonOrigin) {
      if (!(yield* exists("SELECT 1 FROM identities WHERE uid = ?", identityUid))) {
        throw notFoundError("identity", identityUid);
      }
      if (!(yield* exists("SELECT 1 FROM groups WHERE uid = ?", o.groupUid))) {
        throw notFoundError("group", o.groupUid);
      }
      yield* run(
        `INSERT INTO person_origins (identity_uid, group_uid, kind, source_uid, create_time)
         VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
        identityUid,
        o.groupUid,
        o.kind,
        o.sourceUid,
        o.createTime,
      );
    },
    // The sign-in that notes it is the event; no access answer depends on it.
    { accessNeutral: true, bookkeeping: true },
  ),

  listPersonSessions: read(function* (identityUid: string, now: number): Steps<SessionRecord[]> {
    const found = yield* rows<{
      id: string;
      client_id: string;
      create_time: number;
      expire_time: number | null;
    }>(
      `SELECT s.id, s.client_id, s.create_time,
         (SELECT max(t.expire_time) FROM oauth_refresh_tokens AS t WHERE t.session_id = s.id
           AND t.use_time IS NULL) AS expire_time
       FROM oauth_sessions AS s WHERE s.identity_uid = ? AND ${liveSession}
       ORDER BY s.create_time DESC, s.id LIMIT 1000`,
      identityUid,
      now,
      now,
    );
    return found.map((s) => ({
      id: s.id,
      clientId: s.client_id,
      createTime: Number(s.create_time),
      expireTime: Number(s.expire_time ?? s.create_time),
    }));
  }),

  revokePersonSessions: write(
    function* (
      group: string,
      identityUid: string,
      sessionId: string,
      now: number,
    ): Steps<SessionsRevoked> {
      // Checked in the transaction that ends them: only a person of the group's.
      const of = peopleOf(group);
      const person = `SELECT 1 FROM identities AS i WHERE i.uid = ? AND ${of.sql}`;
      if (!(yield* exists(person, identityUid, ...of.params))) {
        throw notFoundError("person", identityUid);
      }
      const ids = yield* rows<{ id: string }>(
        `SELECT s.id FROM oauth_sessions AS s WHERE s.identity_uid = ?
         ${sessionId === "" ? "" : "AND s.id = ?"} AND ${liveSession}`,
        identityUid,
        ...(sessionId === "" ? [] : [sessionId]),
        now,
        now,
      );
      // One named session that is not (or no longer) live is not there to end.
      if (sessionId !== "" && ids.length === 0) throw notFoundError("session", sessionId);
      for (const { id } of ids) {
        // As a sign-out: the row stays (its access tokens stay refused), its tokens go.
        yield* run("UPDATE oauth_sessions SET revoke_time = ? WHERE id = ?", now, id);
        yield* run("DELETE FROM oauth_refresh_tokens WHERE session_id = ?", id);
      }
      // An outcome of kind "none" records no event (audit-scope.ts): nothing changed.
      return { kind: ids.length > 0 ? "revoked" : "none", count: ids.length };
    },
    { accessNeutral: true },
  ),
} satisfies OpsOf<
  "listPeople" | "getPerson" | "notePersonOrigin" | "listPersonSessions" | "revokePersonSessions"
>;
