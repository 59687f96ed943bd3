import {
  actorJsonOf,
  type EventRow,
  eventPlacement,
  personSessionTypes,
  withActor,
} from "../../events/audit-scope.js";
import { newEventId } from "../../events/event-id.js";
import { namesTaking } from "../../events/legacy-types.js";
import { rootOf } from "../../uid.js";
import {
  eventConditions,
  eventListColumns,
  eventRecordOf,
  pruneEventsSql,
} from "../rows/event-rows.js";
import { column, dialect, list, type OpsOf, one, run, type Steps, write } from "./operation.js";
import { fanOut } from "./subscriptions.js";

/**
 * Append `row` to the outbox, in the change's open transaction: its data completed with the
 * actor's issuer and subject (for people), and a webhook delivery for each subscription it
 * matches (the deliveries commit with the event). Each store drives it beside the change it
 * records (sqlite-store.ts `guard`, pg-store.ts `guard`). On PostgreSQL it is one statement
 * (appendEventPg): every statement is a round trip, and this is on every audited write.
 */
export function* appendEvent(row: EventRow): Steps<void> {
  const at = eventPlacement(row);
  // A person's session event is also copied to their organizations (below), from its data:
  // those take the statements of both backends.
  const shared = personSessionTypes.has(row.type) && !row.subject.includes("/");
  if (!shared && (yield* dialect()) === "pg") {
    // One statement, its deliveries too. A subscription naming a legacy type takes what it
    // was about (legacy-types.ts).
    yield* run(appendEventPg, ...splicedEventParams(row, at), namesTaking(row.type));
    return;
  }
  if (!shared) {
    // One statement: the actor's issuer and subject are read inside the INSERT.
    yield* run(appendEventSqlite, ...splicedEventParams(row, at));
    yield* fanOut({
      id: row.id,
      uid: at.uid,
      subject: row.subject,
      type: row.type,
      time: row.time,
    });
    return;
  }
  const who = yield* one<{ issuer: string; subject: string }>(
    "SELECT issuer, subject FROM identities WHERE uid = ?",
    row.actorUid,
  );
  const data = withActor(row, who);
  yield* run(
    `INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ...eventColumnParams(row, at),
    data,
  );
  yield* fanOut({ id: row.id, uid: at.uid, subject: row.subject, type: row.type, time: row.time });
  yield* shareWithOrganizations(row, data);
}

/**
 * The parameters of appendEventSqlite and appendEventPg's INSERT: the event's columns, then
 * its data serialized once in two parts (actorJsonOf) that the statement joins around the
 * actor's issuer and subject, read by the actor's uid: the text withActor writes, without
 * asking for them first.
 */
function splicedEventParams(row: EventRow, at: EventPlacement) {
  const text = actorJsonOf(row);
  return [...eventColumnParams(row, at), text.head, row.actorUid, text.tail];
}

/** The events table's columns but the data, in the INSERTs' order (id ... actor_uid). */
function eventColumnParams(row: EventRow, at: EventPlacement) {
  return [row.id, at.uid, at.groupUid, row.type, row.source, row.subject, row.time, row.actorUid];
}

type EventPlacement = ReturnType<typeof eventPlacement>;

/**
 * appendEvent's INSERT on SQLite: the data's head, the actor's issuer and subject as JSON when
 * the actor has an issuer (withActor's rule, actorIssuerJson), and its tail. json_quote
 * writes a string as JSON.stringify does but for control characters, which it escapes as
 * \u00XX where JSON.stringify may write \n: the same string either way.
 */
const appendEventSqlite = `
  INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ? || COALESCE(
    (SELECT ',"issuer":' || json_quote(issuer) || ',"subject":' || json_quote(subject)
     FROM identities WHERE uid = ? AND issuer <> ''), '') || ?)`;

/**
 * A person belongs to no organization, so their sign-ins, sign-outs and revoked sessions are
 * no organization's events: each organization where the person holds a role (directly or
 * through a team), whose identity provider the person came through (person_origins), or
 * whose provider this sign-in goes through, gets its own copy, a child of the organization
 * (`<org>/<person>/<id>`, its own id) that its owners list like any of its events. The same
 * organizations for a sign-in, its sign-out and its revocation: a sign-out names no provider.
 * A copy says nothing of another organization: a provider named in `via` only in that
 * provider's own.
 */
function* shareWithOrganizations(row: EventRow, data: string): Steps<void> {
  const groups = yield* column<string>(
    `SELECT group_uid FROM role_bindings WHERE identity_uid = ?
     UNION SELECT b.group_uid FROM team_members AS m
       JOIN role_bindings AS b ON b.team_uid = m.team_uid WHERE m.identity_uid = ?
     UNION SELECT group_uid FROM person_origins WHERE identity_uid = ? AND kind = ?`,
    row.subject,
    row.subject,
    row.subject,
    "identity_provider",
  );
  const through = row.data.via?.identityProviderUid;
  const orgs = new Set(groups.map(rootOf));
  if (through) orgs.add(rootOf(through));
  const { via: _, ...rest } = JSON.parse(data) as Record<string, unknown>;
  for (const org of orgs) {
    const id = newEventId(row.time);
    const own = through && rootOf(through) === org ? data : JSON.stringify(rest);
    yield* run(
      `INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      id,
      `${org}/${row.subject}/${id}`,
      org,
      row.type,
      row.source,
      row.subject,
      row.time,
      row.actorUid,
      own,
    );
  }
}

/**
 * appendEvent on PostgreSQL, one statement: the event, its data with the actor's issuer and
 * subject when the actor has an issuer (withActor's rule: the data's head, then
 * actorIssuerJson's text, then its tail), and a delivery for each subscription of its
 * organization at or above its subject taking its type (fanOut's rule, matchingSubscriptions;
 * a paused subscription's delivery is due when the pause ends).
 */
const appendEventPg = `
  WITH ev AS (
    INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?::text || COALESCE(
      (SELECT ',"issuer":' || to_json(issuer)::text || ',"subject":' || to_json(subject)::text
       FROM identities WHERE uid = ? AND issuer <> ''), '') || ?::text)
    RETURNING id, uid, group_uid, subject, type, time
  )
  INSERT INTO webhook_deliveries (id, subscription_uid, event_id, event_uid, next_attempt_time)
  SELECT gen_random_uuid()::text, s.uid, ev.id, ev.uid, GREATEST(ev.time, s.paused_until)
  FROM ev JOIN webhook_subscriptions s ON s.org_uid = ev.group_uid
  WHERE (ev.subject = s.group_uid OR starts_with(ev.subject, s.group_uid || '/'))
    AND jsonb_exists_any(s.event_types::jsonb, ?::text[])`;

/** The event operations of both backends; the events themselves come with changes (above). */
export const eventOps = {
  listEvents: list(eventListColumns, eventRecordOf, (query) => ({
    query,
    extra: eventConditions(query.filters),
  })),

  // The write path appends the call's event (its store's guard): there is nothing else to
  // write, and nothing an access answer depends on.
  recordChange: write(function* (_subjectUid: string) {}, { accessNeutral: true }),

  // The retention job's deletes: no access answer depends on an event, and no event records
  // them (the trail would grow with its own pruning).
  pruneEvents: write(
    function* (before: number, limit: number) {
      return yield* run(pruneEventsSql, before, limit);
    },
    { accessNeutral: true, bookkeeping: true },
  ),
} satisfies OpsOf<"listEvents" | "recordChange" | "pruneEvents">;
