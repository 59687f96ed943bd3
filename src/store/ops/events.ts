import {
  type EventRow,
  eventPlacement,
  personSessionTypes,
  withActor,
} from "../../events/audit-scope.js";
import { newEventId } from "../../events/event-id.js";
import { rootOf } from "../../uid.js";
import {
  eventConditions,
  eventListColumns,
  eventRecordOf,
  pruneEventsSql,
} from "../rows/event-rows.js";
import { column, list, type OpsOf, one, run, type Steps, write } from "./operation.js";
import { fanOut } from "./subscriptions.js";

/**
 * Append `row` to the outbox, in the change's open transaction: its data completed with the
 * actor's issuer and subject (for people), and a webhook delivery for each subscription it
 * matches (the deliveries commit with the event). Each store drives it beside the change it
 * records (sqlite-store.ts `guard`, pg-store.ts `guard`).
 */
export function* appendEvent(row: EventRow): Steps<void> {
  const who = yield* one<{ issuer: string; subject: string }>(
    "SELECT issuer, subject FROM identities WHERE uid = ?",
    row.actorUid,
  );
  const at = eventPlacement(row);
  const data = withActor(row, who);
  yield* run(
    `INSERT INTO events (id, uid, group_uid, type, source, subject, time, actor_uid, data)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    row.id,
    at.uid,
    at.groupUid,
    row.type,
    row.source,
    row.subject,
    row.time,
    row.actorUid,
    data,
  );
  yield* fanOut(row);
  if (personSessionTypes.has(row.type) && !row.subject.includes("/")) {
    yield* shareWithOrganizations(row, data);
  }
}

/**
 * A person belongs to no organization, so their sign-ins, sign-outs and revoked sessions are
 * no organization's events: each organization where the person holds a role, or whose
 * identity provider the sign-in went through, gets its own copy, a child of the organization
 * (`<org>/<person>/<id>`, its own id) that its owners list like any of its events. A copy says
 * nothing of another organization: a provider named in `via` only in that provider's own.
 */
function* shareWithOrganizations(row: EventRow, data: string): Steps<void> {
  const groups = yield* column<string>(
    "SELECT DISTINCT group_uid FROM role_bindings WHERE identity_uid = ?",
    row.subject,
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
