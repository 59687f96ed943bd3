import { randomUUID } from "node:crypto";
import type { Database } from "better-sqlite3";
import { rootOf } from "../../uid.js";
import { matchingSubscriptions } from "../rows/subscription-rows.js";

// The subscription and outbox operations are written once for both backends
// (ops/subscriptions.ts); what stays here is the event writer's fan-out.

/** The fan-out of the SQLite store: an event's deliveries, in the event's transaction. */
export interface SqliteFanOut {
  /** Write a delivery of the event to each subscription it matches. */
  deliver(event: { id: string; subject: string; type: string; time: number }): void;
}

/** Create the fan-out on an open, migrated database. */
export function createSqliteFanOut(db: Database): SqliteFanOut {
  const ofOrg = db.prepare(
    "SELECT uid, group_uid, event_types FROM webhook_subscriptions WHERE org_uid = ?",
  );
  const insert = db.prepare(
    `INSERT INTO webhook_deliveries (id, subscription_uid, event_id, next_attempt_time)
     VALUES (?, ?, ?, ?)`,
  );
  return {
    deliver(event) {
      const rows = ofOrg.all(rootOf(event.subject)) as {
        uid: string;
        group_uid: string;
        event_types: string;
      }[];
      if (rows.length === 0) return;
      for (const uid of matchingSubscriptions(rows, event)) {
        insert.run(randomUUID(), uid, event.id, event.time);
      }
    },
  };
}
