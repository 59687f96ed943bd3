import { randomUUID } from "node:crypto";
import { rootOf } from "../../uid.js";
import { matchingSubscriptions } from "../rows/subscription-rows.js";
import type { Sql } from "./pg-db.js";

// The subscription and outbox operations are written once for both backends
// (ops/subscriptions.ts); what stays here is the event writer's fan-out.

/** Write a delivery of `event` to each subscription it matches, on `sql` (its transaction). */
export async function fanOutPg(
  sql: Sql,
  event: { id: string; subject: string; type: string; time: number },
): Promise<void> {
  const rows = await sql.rows<{ uid: string; group_uid: string; event_types: string }>(
    "SELECT uid, group_uid, event_types FROM webhook_subscriptions WHERE org_uid = $1",
    [rootOf(event.subject)],
  );
  for (const uid of matchingSubscriptions(rows, event)) {
    await sql.run(
      `INSERT INTO webhook_deliveries (id, subscription_uid, event_id, next_attempt_time)
       VALUES ($1, $2, $3, $4)`,
      [randomUUID(), uid, event.id, event.time],
    );
  }
}
