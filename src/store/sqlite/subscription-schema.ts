import type { Migration } from "./migrations.js";

/**
 * Webhook subscriptions and their outbox. A subscription goes with its group (a group's
 * delete takes what lives only in it), its deliveries with it. A delivery names its event by
 * id, without a foreign key: retention may prune an event, never blocked by a delivery.
 */
export const subscriptionsMigration: Migration = {
  description: "webhook subscriptions and their outbox of deliveries",
  sql: `
    CREATE TABLE webhook_subscriptions (
      uid TEXT PRIMARY KEY,
      group_uid TEXT NOT NULL REFERENCES groups (uid) ON DELETE CASCADE,
      -- The organization: an event is matched against its organization's subscriptions.
      org_uid TEXT NOT NULL,
      name TEXT NOT NULL,
      description TEXT NOT NULL,
      sink TEXT NOT NULL,
      event_types TEXT NOT NULL,
      secret TEXT NOT NULL,
      create_time INTEGER NOT NULL,
      update_time INTEGER NOT NULL,
      delivered_count INTEGER NOT NULL DEFAULT 0,
      failed_attempts INTEGER NOT NULL DEFAULT 0,
      abandoned_count INTEGER NOT NULL DEFAULT 0,
      last_attempt_time INTEGER NOT NULL DEFAULT 0,
      last_success_time INTEGER NOT NULL DEFAULT 0,
      last_status INTEGER NOT NULL DEFAULT 0,
      last_error TEXT NOT NULL DEFAULT ''
    ) STRICT;
    CREATE UNIQUE INDEX webhook_subscriptions_name ON webhook_subscriptions (group_uid, name);
    CREATE INDEX webhook_subscriptions_org ON webhook_subscriptions (org_uid);
    CREATE INDEX webhook_subscriptions_create_time ON webhook_subscriptions (create_time, uid);
    CREATE INDEX webhook_subscriptions_update_time ON webhook_subscriptions (update_time, uid);

    CREATE TABLE webhook_deliveries (
      id TEXT PRIMARY KEY,
      subscription_uid TEXT NOT NULL REFERENCES webhook_subscriptions (uid) ON DELETE CASCADE,
      event_id TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_time INTEGER NOT NULL,
      -- Who holds the delivery while sending it, and until when ('' and 0: nobody).
      lease TEXT NOT NULL DEFAULT '',
      lease_until INTEGER NOT NULL DEFAULT 0
    ) STRICT;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_time);
    CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_uid);
    -- Retention's prune skips the events with a delivery pending (pruneEventsSql).
    CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
    -- What the store reads a subscription from: its row and its deliveries pending.
    CREATE VIEW webhook_subscriptions_with_pending AS
      SELECT s.*, (SELECT count(*) FROM webhook_deliveries d WHERE d.subscription_uid = s.uid)
        AS pending
      FROM webhook_subscriptions s;
  `,
};

/**
 * Fair delivery (docs/events.md "Fair delivery"): each subscription's circuit breaker (its
 * failures in a row, and until when its deliveries are paused), an index on the leases (the
 * claim counts the attempts in flight per subscription and organization, across servers) and
 * one on a subscription's deliveries by due time (the claim takes the oldest of each).
 */
export const subscriptionBreakerMigration: Migration = {
  description: "webhook circuit breakers and fair claims",
  sql: `
    ALTER TABLE webhook_subscriptions ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE webhook_subscriptions ADD COLUMN paused_until INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX webhook_deliveries_lease ON webhook_deliveries (lease_until);
    DROP INDEX webhook_deliveries_subscription;
    CREATE INDEX webhook_deliveries_subscription
      ON webhook_deliveries (subscription_uid, next_attempt_time);
  `,
};
