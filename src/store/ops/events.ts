import { type EventRow, eventPlacement, withActor } from "../../events/audit-scope.js";
import {
  eventConditions,
  eventListColumns,
  eventRecordOf,
  pruneEventsSql,
} from "../rows/event-rows.js";
import { list, type OpsOf, one, run, type Steps, write } from "./operation.js";
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
    withActor(row, who),
  );
  yield* fanOut(row);
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
