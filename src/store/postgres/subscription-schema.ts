import type { PgMigration } from "./migrations.js";

/** As SQLite's (src/store/sqlite/subscription-schema.ts): subscriptions and their outbox. */
export const pgSubscriptionsMigration: PgMigration = {
  description: "webhook subscriptions and their outbox of deliveries",
  sql: `
    CREATE TABLE webhook_subscriptions (
      uid TEXT COLLATE "C" PRIMARY KEY,
      group_uid TEXT COLLATE "C" NOT NULL REFERENCES groups (uid) ON DELETE CASCADE,
      org_uid TEXT COLLATE "C" NOT NULL,
      name TEXT COLLATE "C" NOT NULL,
      description TEXT NOT NULL,
      sink TEXT NOT NULL,
      event_types TEXT NOT NULL,
      secret TEXT NOT NULL,
      create_time BIGINT NOT NULL,
      update_time BIGINT NOT NULL,
      delivered_count BIGINT NOT NULL DEFAULT 0,
      failed_attempts BIGINT NOT NULL DEFAULT 0,
      abandoned_count BIGINT NOT NULL DEFAULT 0,
      last_attempt_time BIGINT NOT NULL DEFAULT 0,
      last_success_time BIGINT NOT NULL DEFAULT 0,
      last_status INTEGER NOT NULL DEFAULT 0,
      last_error TEXT NOT NULL DEFAULT ''
    );
    CREATE UNIQUE INDEX webhook_subscriptions_name ON webhook_subscriptions (group_uid, name);
    CREATE INDEX webhook_subscriptions_org ON webhook_subscriptions (org_uid);
    CREATE INDEX webhook_subscriptions_uid ON webhook_subscriptions (uid text_pattern_ops);
    CREATE INDEX webhook_subscriptions_create_time ON webhook_subscriptions (create_time, uid);
    CREATE INDEX webhook_subscriptions_update_time ON webhook_subscriptions (update_time, uid);

    CREATE TABLE webhook_deliveries (
      id TEXT COLLATE "C" PRIMARY KEY,
      subscription_uid TEXT COLLATE "C" NOT NULL
        REFERENCES webhook_subscriptions (uid) ON DELETE CASCADE,
      event_id TEXT COLLATE "C" NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_time BIGINT NOT NULL,
      lease TEXT COLLATE "C" NOT NULL DEFAULT '',
      lease_until BIGINT NOT NULL DEFAULT 0
    );
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

/** As SQLite's subscriptionBreakerMigration; the view is made again to show the new columns. */
export const pgSubscriptionBreakerMigration: PgMigration = {
  description: "webhook circuit breakers and fair claims",
  sql: `
    ALTER TABLE webhook_subscriptions ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE webhook_subscriptions ADD COLUMN paused_until BIGINT NOT NULL DEFAULT 0;
    CREATE INDEX webhook_deliveries_lease ON webhook_deliveries (lease_until);
    DROP INDEX webhook_deliveries_subscription;
    CREATE INDEX webhook_deliveries_subscription
      ON webhook_deliveries (subscription_uid, next_attempt_time);
    -- A view's * is expanded when it is made: made again, it has the new columns.
    DROP VIEW webhook_subscriptions_with_pending;
    CREATE VIEW webhook_subscriptions_with_pending AS
      SELECT s.*, (SELECT count(*) FROM webhook_deliveries d WHERE d.subscription_uid = s.uid)
        AS pending
      FROM webhook_subscriptions s;
  `,
};
