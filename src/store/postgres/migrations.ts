import type { PgDb } from "./pg-db.js";
import { pgRegistryNamespacesMigration } from "./registry-namespace-schema.js";
import { pgSubscriptionBreakerMigration, pgSubscriptionsMigration } from "./subscription-schema.js";

/** One schema step. Steps are applied in order and never edited once released: append. */
export interface PgMigration {
  description: string;
  sql: string;
}

/**
 * The PostgreSQL schema. It keeps the SQLite schema's ideas: an ancestor closure table over
 * integer group ids, descendant counts, and (sort column, uid) indexes for keyset pages.
 *
 * Every text column is COLLATE "C": lists order and compare bytewise, as SQLite does, and the
 * uid range that stands for "strictly below G" (`uid > 'G/' AND uid < 'G0'`) holds exactly the
 * uids that start with `G/`. Times are milliseconds since the epoch (bigint).
 */
export const pgMigrations: readonly PgMigration[] = [
  {
    description: "the whole schema, as SQLite's migrations 1 to 12 leave it",
    sql: `
      CREATE TABLE groups (
        uid TEXT COLLATE "C" PRIMARY KEY,
        id BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        parent_uid TEXT COLLATE "C" REFERENCES groups (uid),
        name TEXT COLLATE "C" NOT NULL,
        description TEXT NOT NULL,
        verified BOOLEAN NOT NULL DEFAULT false,
        resource_limits TEXT NOT NULL DEFAULT '{}',
        descendant_count BIGINT NOT NULL DEFAULT 0,
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE UNIQUE INDEX groups_parent_name ON groups (parent_uid, name);
      CREATE INDEX groups_name ON groups (name, uid);
      CREATE INDEX groups_create_time ON groups (create_time, uid);
      CREATE INDEX groups_update_time ON groups (update_time, uid);

      CREATE TABLE group_closure (
        ancestor BIGINT NOT NULL REFERENCES groups (id),
        descendant BIGINT NOT NULL REFERENCES groups (id),
        depth INTEGER NOT NULL,
        PRIMARY KEY (ancestor, depth, descendant)
      );
      CREATE UNIQUE INDEX group_closure_descendant ON group_closure (descendant, ancestor);
      CREATE VIEW group_closure_by_uid AS
        SELECT a.uid AS ancestor, d.uid AS descendant, c.depth AS depth
        FROM group_closure AS c JOIN groups AS a ON a.id = c.ancestor
        JOIN groups AS d ON d.id = c.descendant;

      CREATE TABLE signing_keys (
        kid TEXT COLLATE "C" PRIMARY KEY,
        private_jwk TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        create_time BIGINT NOT NULL
      );
      CREATE TABLE secrets (name TEXT COLLATE "C" PRIMARY KEY, value BYTEA NOT NULL);
      CREATE TABLE settings (name TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL);

      CREATE TABLE identities (
        uid TEXT COLLATE "C" PRIMARY KEY,
        group_uid TEXT COLLATE "C" REFERENCES groups (uid),
        name TEXT COLLATE "C" NOT NULL,
        description TEXT NOT NULL,
        email TEXT NOT NULL DEFAULT '',
        issuer TEXT NOT NULL DEFAULT '',
        subject TEXT NOT NULL DEFAULT '',
        claim_match TEXT,
        static_keys TEXT,
        last_seen_time BIGINT NOT NULL,
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE INDEX identities_group ON identities (group_uid, uid);
      CREATE INDEX identities_name ON identities (name, uid);
      CREATE INDEX identities_create_time ON identities (create_time, uid);
      CREATE INDEX identities_update_time ON identities (update_time, uid);

      CREATE TABLE roles (
        uid TEXT COLLATE "C" PRIMARY KEY,
        group_uid TEXT COLLATE "C" REFERENCES groups (uid),
        name TEXT COLLATE "C" NOT NULL,
        description TEXT NOT NULL,
        builtin BOOLEAN NOT NULL DEFAULT false,
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE INDEX roles_group ON roles (group_uid, uid);
      CREATE INDEX roles_name ON roles (name, uid);
      CREATE INDEX roles_create_time ON roles (create_time, uid);
      CREATE INDEX roles_update_time ON roles (update_time, uid);

      CREATE TABLE role_capabilities (
        role_uid TEXT COLLATE "C" NOT NULL REFERENCES roles (uid) ON DELETE CASCADE,
        capability TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (role_uid, capability)
      );

      CREATE TABLE role_bindings (
        uid TEXT COLLATE "C" PRIMARY KEY,
        group_uid TEXT COLLATE "C" NOT NULL REFERENCES groups (uid),
        identity_uid TEXT COLLATE "C" NOT NULL REFERENCES identities (uid),
        role_uid TEXT COLLATE "C" NOT NULL REFERENCES roles (uid),
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE UNIQUE INDEX role_bindings_identity
        ON role_bindings (identity_uid, group_uid, role_uid);
      CREATE INDEX role_bindings_group ON role_bindings (group_uid, uid);
      CREATE INDEX role_bindings_role ON role_bindings (role_uid);
      CREATE INDEX role_bindings_create_time ON role_bindings (create_time, uid);
      CREATE INDEX role_bindings_update_time ON role_bindings (update_time, uid);

      -- capabilities: a JSON array of the role's capabilities, sorted (json: pg parses it).
      CREATE VIEW roles_view AS
        SELECT r.*, (SELECT COALESCE(json_agg(c.capability ORDER BY c.capability), '[]'::json)
                     FROM role_capabilities AS c WHERE c.role_uid = r.uid) AS capabilities
        FROM roles AS r;

      CREATE VIEW role_bindings_view AS
        SELECT b.uid, b.group_uid, b.identity_uid, b.role_uid, b.create_time, b.update_time,
          r.name AS role_name, r.description AS role_description,
          i.name AS identity_name, i.description AS identity_description,
          i.issuer AS identity_issuer, i.subject AS identity_subject,
          g.name AS group_name, g.description AS group_description
        FROM role_bindings AS b
          JOIN roles AS r ON r.uid = b.role_uid
          JOIN identities AS i ON i.uid = b.identity_uid
          JOIN groups AS g ON g.uid = b.group_uid;

      CREATE TABLE repos (
        uid TEXT COLLATE "C" PRIMARY KEY,
        group_uid TEXT COLLATE "C" NOT NULL REFERENCES groups (uid),
        name TEXT COLLATE "C" NOT NULL,
        description TEXT NOT NULL,
        aliases TEXT NOT NULL,
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE UNIQUE INDEX repos_group_name ON repos (group_uid, name);
      CREATE INDEX repos_name ON repos (name, uid);
      CREATE INDEX repos_create_time ON repos (create_time, uid);
      CREATE INDEX repos_update_time ON repos (update_time, uid);

      CREATE TABLE tags (
        uid TEXT COLLATE "C" PRIMARY KEY,
        repo_uid TEXT COLLATE "C" NOT NULL REFERENCES repos (uid),
        group_uid TEXT COLLATE "C" NOT NULL,
        name TEXT COLLATE "C" NOT NULL,
        digest TEXT COLLATE "C" NOT NULL,
        deprecated BOOLEAN NOT NULL,
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE UNIQUE INDEX tags_repo_name ON tags (repo_uid, name);
      CREATE INDEX tags_digest ON tags (digest);
      CREATE INDEX tags_name ON tags (name, uid);
      CREATE INDEX tags_create_time ON tags (create_time, uid);
      CREATE INDEX tags_update_time ON tags (update_time, uid);

      -- search: the lowercased advisory id, aliases, artifact and component names, one a
      -- line, matched by substring (LIKE; no trigram index is assumed to be installed).
      CREATE TABLE advisories (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        uid TEXT COLLATE "C" NOT NULL UNIQUE,
        group_uid TEXT COLLATE "C" NOT NULL REFERENCES groups (uid),
        advisory_id TEXT COLLATE "C" NOT NULL,
        aliases TEXT NOT NULL,
        summary TEXT NOT NULL,
        artifact_name TEXT COLLATE "C" NOT NULL,
        component_name TEXT COLLATE "C" NOT NULL,
        component_type TEXT COLLATE "C" NOT NULL,
        severities TEXT NOT NULL,
        events TEXT NOT NULL,
        latest_event_type INTEGER NOT NULL,
        search TEXT COLLATE "C" NOT NULL,
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE UNIQUE INDEX advisories_group_id ON advisories (group_uid, advisory_id);
      CREATE INDEX advisories_id ON advisories (advisory_id, uid);
      CREATE INDEX advisories_artifact ON advisories (artifact_name);
      CREATE INDEX advisories_component ON advisories (component_name);
      CREATE INDEX advisories_latest ON advisories (latest_event_type);
      CREATE INDEX advisories_create_time ON advisories (create_time, uid);
      CREATE INDEX advisories_update_time ON advisories (update_time, uid);

      CREATE TABLE advisory_aliases (
        alias TEXT COLLATE "C" NOT NULL,
        advisory_seq BIGINT NOT NULL REFERENCES advisories (seq) ON DELETE CASCADE,
        PRIMARY KEY (alias, advisory_seq)
      );
      CREATE INDEX advisory_aliases_seq ON advisory_aliases (advisory_seq);

      CREATE TABLE identity_providers (
        uid TEXT COLLATE "C" PRIMARY KEY,
        group_uid TEXT COLLATE "C" NOT NULL REFERENCES groups (uid),
        name TEXT COLLATE "C" NOT NULL,
        description TEXT NOT NULL,
        default_role TEXT COLLATE "C" NOT NULL,
        oidc TEXT NOT NULL,
        client_secret TEXT NOT NULL,
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE INDEX identity_providers_group ON identity_providers (group_uid, uid);
      CREATE INDEX identity_providers_name ON identity_providers (name, uid);
      CREATE INDEX identity_providers_create_time ON identity_providers (create_time, uid);
      CREATE INDEX identity_providers_update_time ON identity_providers (update_time, uid);

      CREATE TABLE account_associations (
        uid TEXT COLLATE "C" PRIMARY KEY REFERENCES groups (uid),
        name TEXT COLLATE "C" NOT NULL,
        description TEXT NOT NULL,
        amazon TEXT,
        google TEXT,
        azure TEXT,
        github TEXT,
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE INDEX account_associations_name ON account_associations (name, uid);
      CREATE INDEX account_associations_create_time
        ON account_associations (create_time, uid);
      CREATE INDEX account_associations_update_time
        ON account_associations (update_time, uid);

      CREATE TABLE group_invites (
        uid TEXT COLLATE "C" PRIMARY KEY,
        group_uid TEXT COLLATE "C" NOT NULL REFERENCES groups (uid),
        role_uid TEXT COLLATE "C" NOT NULL REFERENCES roles (uid) ON DELETE CASCADE,
        email TEXT NOT NULL,
        single_use BOOLEAN NOT NULL,
        code_hash TEXT COLLATE "C" NOT NULL UNIQUE,
        expiration_time BIGINT NOT NULL,
        creator_uid TEXT COLLATE "C" NOT NULL DEFAULT '',
        create_time BIGINT NOT NULL,
        update_time BIGINT NOT NULL
      );
      CREATE INDEX group_invites_group ON group_invites (group_uid, uid);
      CREATE INDEX group_invites_role ON group_invites (role_uid);
      CREATE INDEX group_invites_create_time ON group_invites (create_time, uid);
      CREATE INDEX group_invites_update_time ON group_invites (update_time, uid);
      CREATE VIEW group_invites_view AS
        SELECT v.uid, v.group_uid, v.role_uid, v.email, v.single_use, v.expiration_time,
          v.create_time, v.update_time, v.creator_uid,
          r.name AS role_name, r.description AS role_description
        FROM group_invites AS v JOIN roles AS r ON r.uid = v.role_uid;

      CREATE TABLE oauth_pending_logins (
        state_hash TEXT COLLATE "C" PRIMARY KEY,
        login TEXT NOT NULL,
        expire_time BIGINT NOT NULL
      );
      CREATE INDEX oauth_pending_logins_expiry ON oauth_pending_logins (expire_time);
      CREATE TABLE oauth_sessions (
        id TEXT COLLATE "C" PRIMARY KEY,
        identity_uid TEXT COLLATE "C" NOT NULL REFERENCES identities (uid) ON DELETE CASCADE,
        client_id TEXT NOT NULL,
        create_time BIGINT NOT NULL,
        revoke_time BIGINT
      );
      CREATE INDEX oauth_sessions_identity ON oauth_sessions (identity_uid);
      CREATE TABLE oauth_codes (
        code_hash TEXT COLLATE "C" PRIMARY KEY,
        session_id TEXT COLLATE "C" NOT NULL REFERENCES oauth_sessions (id) ON DELETE CASCADE,
        redirect_uri TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        expire_time BIGINT NOT NULL,
        redeem_time BIGINT
      );
      CREATE INDEX oauth_codes_session ON oauth_codes (session_id);
      CREATE TABLE oauth_refresh_tokens (
        token_hash TEXT COLLATE "C" PRIMARY KEY,
        session_id TEXT COLLATE "C" NOT NULL REFERENCES oauth_sessions (id) ON DELETE CASCADE,
        expire_time BIGINT NOT NULL,
        use_time BIGINT
      );
      CREATE INDEX oauth_refresh_tokens_session ON oauth_refresh_tokens (session_id);
    `,
  },
  {
    description: "logins in flight live in the browser (a sealed cookie), not in the database",
    sql: "DROP TABLE oauth_pending_logins;",
  },
  {
    description: "public repos",
    sql: "ALTER TABLE repos ADD COLUMN is_public BOOLEAN NOT NULL DEFAULT false;",
  },
  {
    description: "the writer of each identity provider, whose authority grants its default role",
    // Providers written before have no recorded writer: their default role grants nothing
    // until someone who may grant it saves the provider again (as invites without a creator).
    sql: `ALTER TABLE identity_providers ADD COLUMN writer_uid TEXT COLLATE "C" NOT NULL DEFAULT '';`,
  },
  {
    description: "sealed logins redeemed once, and people whose sign-in is unfinished",
    // A spent login is kept until the login itself expires. A note on a person says their
    // last sign-in was not completed by a code redemption: the purge deletes such people once
    // the note is old enough (src/auth/oauth/sign-in-purge.ts).
    sql: `
      CREATE TABLE oauth_spent_logins (
        state_hash TEXT COLLATE "C" PRIMARY KEY,
        expire_time BIGINT NOT NULL
      );
      CREATE INDEX oauth_spent_logins_expiry ON oauth_spent_logins (expire_time);
      CREATE TABLE oauth_unfinished_people (
        identity_uid TEXT COLLATE "C" PRIMARY KEY REFERENCES identities (uid) ON DELETE CASCADE,
        note_time BIGINT NOT NULL
      );
      CREATE INDEX oauth_unfinished_people_time ON oauth_unfinished_people (note_time);
      CREATE INDEX oauth_codes_expiry ON oauth_codes (expire_time);
      CREATE INDEX oauth_refresh_tokens_expiry ON oauth_refresh_tokens (expire_time);
    `,
  },
  {
    description: "the audit trail: one CloudEvent a change, written in the change's transaction",
    sql: `
      CREATE TABLE events (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT COLLATE "C" NOT NULL UNIQUE,
        -- The event as a child of its subject in the uid tree (subject/id): the list
        -- machinery's tree filters, cursor and scope work on it as on any resource.
        uid TEXT COLLATE "C" NOT NULL UNIQUE,
        group_uid TEXT COLLATE "C" NOT NULL,
        type TEXT COLLATE "C" NOT NULL,
        source TEXT NOT NULL,
        subject TEXT COLLATE "C" NOT NULL,
        time BIGINT NOT NULL,
        actor_uid TEXT COLLATE "C" NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX events_time ON events (time, seq);
      CREATE INDEX events_subject ON events (subject);
      CREATE INDEX events_uid ON events (uid text_pattern_ops);
    `,
  },
  {
    // As SQLite's: the JSON column is read back, the table is the sign-in page's index.
    description: "email domains of identity providers",
    sql: `
      ALTER TABLE identity_providers ADD COLUMN email_domains TEXT COLLATE "C" NOT NULL DEFAULT '[]';
      CREATE TABLE identity_provider_domains (
        domain TEXT COLLATE "C" NOT NULL,
        provider_uid TEXT COLLATE "C" NOT NULL REFERENCES identity_providers (uid) ON DELETE CASCADE,
        PRIMARY KEY (domain, provider_uid)
      );
      CREATE INDEX identity_provider_domains_provider ON identity_provider_domains (provider_uid);
    `,
  },
  pgSubscriptionsMigration,
  pgSubscriptionBreakerMigration,
  pgRegistryNamespacesMigration,
  {
    // As SQLite's: claim times for the sign-in lookups' order, DNS verification of domains.
    description: "claim times and verification of identity provider names and domains; idle people",
    sql: `
      ALTER TABLE identity_providers ADD COLUMN name_time BIGINT NOT NULL DEFAULT 0;
      UPDATE identity_providers SET name_time = update_time;
      CREATE INDEX identity_providers_name_time ON identity_providers (name, name_time, uid);
      ALTER TABLE identity_provider_domains ADD COLUMN claim_time BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE identity_provider_domains ADD COLUMN verify_time BIGINT;
      ALTER TABLE identity_provider_domains ADD COLUMN check_time BIGINT NOT NULL DEFAULT 0;
      UPDATE identity_provider_domains AS d SET claim_time = p.update_time
        FROM identity_providers AS p WHERE p.uid = d.provider_uid;
      CREATE INDEX identity_provider_domains_check ON identity_provider_domains (check_time)
        WHERE verify_time IS NULL;
      CREATE INDEX identities_people_seen ON identities (last_seen_time, uid)
        WHERE group_uid IS NULL;
    `,
  },
  {
    // As SQLite's: organizations named with spaces take their names' namespaces with '-'.
    description: "registry namespaces of organizations named with spaces",
    sql: `
      INSERT INTO registry_namespaces (name, org_uid, claim_time)
        SELECT DISTINCT ON (replace(name, ' ', '-')) replace(name, ' ', '-'), uid, create_time
        FROM groups WHERE parent_uid IS NULL AND strpos(name, ' ') > 0
        ORDER BY replace(name, ' ', '-'), create_time, uid
        ON CONFLICT (name) DO NOTHING;
    `,
  },
];

/** The advisory lock key replicas take to migrate one at a time ("gatehous" in ASCII). */
const migrationLock = 0x6761746568_6f7573n.toString();

/**
 * Bring the schema up to date. Replicas starting together take a transaction-scoped advisory
 * lock first, so exactly one applies each step and the others find it done. Each step and its
 * version row commit together. Throws if the database is newer than this code.
 */
export async function migratePg(db: PgDb, steps: readonly PgMigration[] = pgMigrations) {
  // Not db.write: a migration is not retried blindly and changes no access answer; the lock
  // already serializes the migrators.
  await db.plain(async (sql) => {
    await sql.run("SELECT pg_advisory_xact_lock($1)", [migrationLock]);
    await sql.run(
      "CREATE TABLE IF NOT EXISTS gatehouse_schema (version INTEGER NOT NULL, apply_time BIGINT NOT NULL)",
    );
    const row = await sql.one<{ v: number }>(
      "SELECT COALESCE(MAX(version), 0)::int AS v FROM gatehouse_schema",
    );
    const version = row?.v ?? 0;
    if (version > steps.length) {
      throw new Error(
        `database schema version ${version} is newer than this Gatehouse (${steps.length})`,
      );
    }
    for (const [i, step] of steps.entries()) {
      if (i < version) continue;
      try {
        await sql.run(step.sql);
      } catch (err) {
        throw new Error(`migration ${i + 1} (${step.description}) failed`, { cause: err });
      }
      await sql.run("INSERT INTO gatehouse_schema (version, apply_time) VALUES ($1, $2)", [
        i + 1,
        Date.now(),
      ]);
    }
  });
}
