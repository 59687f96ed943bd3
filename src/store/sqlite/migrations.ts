import type { Database } from "better-sqlite3";
import { registryNamespacesMigration } from "./registry-namespace-schema.js";
import { subscriptionBreakerMigration, subscriptionsMigration } from "./subscription-schema.js";

/** One schema step. Steps are applied in order and never edited once released: append. */
export interface Migration {
  /** What the step adds, for error messages. */
  description: string;
  sql: string;
}

/**
 * The schema, as an ordered list of steps. `PRAGMA user_version` records how many have been
 * applied, so opening a database applies only the steps it has not seen.
 */
export const migrations: readonly Migration[] = [
  {
    description: "groups and their ancestor closure",
    // Roots store parent_uid NULL: the unique index then treats organizations as distinct (NULLs
    // never collide), so one organization's name never reveals another's, while siblings
    // below a group must differ in name.
    sql: `
      CREATE TABLE groups (
        uid TEXT PRIMARY KEY,
        parent_uid TEXT REFERENCES groups (uid),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        verified INTEGER NOT NULL DEFAULT 0,
        resource_limits TEXT NOT NULL DEFAULT '{}',
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE UNIQUE INDEX groups_parent_name ON groups (parent_uid, name);
      CREATE INDEX groups_name ON groups (name, uid);
      CREATE INDEX groups_create_time ON groups (create_time, uid);
      CREATE INDEX groups_update_time ON groups (update_time, uid);

      CREATE TABLE group_closure (
        ancestor TEXT NOT NULL REFERENCES groups (uid),
        descendant TEXT NOT NULL REFERENCES groups (uid),
        depth INTEGER NOT NULL,
        PRIMARY KEY (ancestor, depth, descendant)
      ) STRICT, WITHOUT ROWID;
      CREATE UNIQUE INDEX group_closure_descendant ON group_closure (descendant, ancestor);
    `,
  },
  {
    description: "signing keys and server secrets",
    sql: `
      CREATE TABLE signing_keys (
        kid TEXT PRIMARY KEY,
        private_jwk TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        create_time INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE secrets (
        name TEXT PRIMARY KEY,
        value BLOB NOT NULL
      ) STRICT;
    `,
  },
  {
    description: "identities, roles and role bindings",
    // group_uid is NULL for a person's root identity and for a built-in role: neither lives
    // in a group, so neither matches a tree filter or a scope of the shared list SQL.
    // issuer and subject repeat the method's values for hydrating role bindings.
    // role_bindings' unique (identity, group, role) index also serves the access queries,
    // which start from the caller's identity; role_capabilities is keyed by role, so the
    // capabilities of a binding are one index lookup whether the role is built-in or custom.
    // The *_view views give the list SQL one row per resource, hydrated, in one query.
    sql: `
      CREATE TABLE identities (
        uid TEXT PRIMARY KEY,
        group_uid TEXT REFERENCES groups (uid),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        email TEXT NOT NULL DEFAULT '',
        issuer TEXT NOT NULL DEFAULT '',
        subject TEXT NOT NULL DEFAULT '',
        claim_match TEXT,
        static_keys TEXT,
        last_seen_time INTEGER NOT NULL,
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX identities_group ON identities (group_uid, uid);
      CREATE INDEX identities_name ON identities (name, uid);
      CREATE INDEX identities_create_time ON identities (create_time, uid);
      CREATE INDEX identities_update_time ON identities (update_time, uid);

      CREATE TABLE roles (
        uid TEXT PRIMARY KEY,
        group_uid TEXT REFERENCES groups (uid),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        builtin INTEGER NOT NULL DEFAULT 0,
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX roles_group ON roles (group_uid, uid);
      CREATE INDEX roles_name ON roles (name, uid);
      CREATE INDEX roles_create_time ON roles (create_time, uid);
      CREATE INDEX roles_update_time ON roles (update_time, uid);

      CREATE TABLE role_capabilities (
        role_uid TEXT NOT NULL REFERENCES roles (uid) ON DELETE CASCADE,
        capability TEXT NOT NULL,
        PRIMARY KEY (role_uid, capability)
      ) STRICT, WITHOUT ROWID;

      CREATE TABLE role_bindings (
        uid TEXT PRIMARY KEY,
        group_uid TEXT NOT NULL REFERENCES groups (uid),
        identity_uid TEXT NOT NULL REFERENCES identities (uid),
        role_uid TEXT NOT NULL REFERENCES roles (uid),
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE UNIQUE INDEX role_bindings_identity ON role_bindings (identity_uid, group_uid, role_uid);
      CREATE INDEX role_bindings_group ON role_bindings (group_uid, uid);
      CREATE INDEX role_bindings_role ON role_bindings (role_uid);
      CREATE INDEX role_bindings_create_time ON role_bindings (create_time, uid);
      CREATE INDEX role_bindings_update_time ON role_bindings (update_time, uid);

      CREATE VIEW roles_view AS
        SELECT r.*, (SELECT json_group_array(c.capability) FROM role_capabilities AS c
                     WHERE c.role_uid = r.uid) AS capabilities
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
    `,
  },
  {
    description: "registry repos and tags",
    // A tag keeps its repo's group on the row, so that scope checks need no join.
    sql: `
      CREATE TABLE repos (
        uid TEXT PRIMARY KEY,
        group_uid TEXT NOT NULL REFERENCES groups (uid),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        aliases TEXT NOT NULL,
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE UNIQUE INDEX repos_group_name ON repos (group_uid, name);
      CREATE INDEX repos_name ON repos (name, uid);
      CREATE INDEX repos_create_time ON repos (create_time, uid);
      CREATE INDEX repos_update_time ON repos (update_time, uid);

      CREATE TABLE tags (
        uid TEXT PRIMARY KEY,
        repo_uid TEXT NOT NULL REFERENCES repos (uid),
        group_uid TEXT NOT NULL,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        deprecated INTEGER NOT NULL,
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE UNIQUE INDEX tags_repo_name ON tags (repo_uid, name);
      CREATE INDEX tags_digest ON tags (digest);
      CREATE INDEX tags_name ON tags (name, uid);
      CREATE INDEX tags_create_time ON tags (create_time, uid);
      CREATE INDEX tags_update_time ON tags (update_time, uid);
    `,
  },
  {
    description: "vulnerability advisories, their aliases and substring search",
    // seq is the rowid the trigram index refers to. search holds the lowercased advisory id,
    // aliases, artifact and component names, one a line, so that a substring never spans two.
    sql: `
      CREATE TABLE advisories (
        seq INTEGER PRIMARY KEY,
        uid TEXT NOT NULL UNIQUE,
        group_uid TEXT NOT NULL REFERENCES groups (uid),
        advisory_id TEXT NOT NULL,
        aliases TEXT NOT NULL,
        summary TEXT NOT NULL,
        artifact_name TEXT NOT NULL,
        component_name TEXT NOT NULL,
        component_type TEXT NOT NULL,
        severities TEXT NOT NULL,
        events TEXT NOT NULL,
        latest_event_type INTEGER NOT NULL,
        search TEXT NOT NULL,
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE UNIQUE INDEX advisories_group_id ON advisories (group_uid, advisory_id);
      CREATE INDEX advisories_id ON advisories (advisory_id, uid);
      CREATE INDEX advisories_artifact ON advisories (artifact_name);
      CREATE INDEX advisories_component ON advisories (component_name);
      CREATE INDEX advisories_latest ON advisories (latest_event_type);
      CREATE INDEX advisories_create_time ON advisories (create_time, uid);
      CREATE INDEX advisories_update_time ON advisories (update_time, uid);

      CREATE TABLE advisory_aliases (
        alias TEXT NOT NULL,
        advisory_seq INTEGER NOT NULL REFERENCES advisories (seq) ON DELETE CASCADE,
        PRIMARY KEY (alias, advisory_seq)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX advisory_aliases_seq ON advisory_aliases (advisory_seq);

      CREATE VIRTUAL TABLE advisory_search USING fts5 (
        search, content = 'advisories', content_rowid = 'seq', tokenize = 'trigram'
      );
      CREATE TRIGGER advisories_search_insert AFTER INSERT ON advisories BEGIN
        INSERT INTO advisory_search (rowid, search) VALUES (new.seq, new.search);
      END;
      CREATE TRIGGER advisories_search_delete AFTER DELETE ON advisories BEGIN
        INSERT INTO advisory_search (advisory_search, rowid, search)
          VALUES ('delete', old.seq, old.search);
      END;
      CREATE TRIGGER advisories_search_update AFTER UPDATE OF search ON advisories BEGIN
        INSERT INTO advisory_search (advisory_search, rowid, search)
          VALUES ('delete', old.seq, old.search);
        INSERT INTO advisory_search (rowid, search) VALUES (new.seq, new.search);
      END;
    `,
  },
  {
    description: "identity providers and account associations",
    // client_secret has its own column so that it never travels inside the oidc JSON the
    // records are read from by accident. default_role is a role uid or '' (no foreign key: a
    // built-in role row is reseeded at open). An account association's uid is its group's uid:
    // the primary key is the one-per-group rule.
    sql: `
      CREATE TABLE identity_providers (
        uid TEXT PRIMARY KEY,
        group_uid TEXT NOT NULL REFERENCES groups (uid),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        default_role TEXT NOT NULL,
        oidc TEXT NOT NULL,
        client_secret TEXT NOT NULL,
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX identity_providers_group ON identity_providers (group_uid, uid);
      CREATE INDEX identity_providers_name ON identity_providers (name, uid);
      CREATE INDEX identity_providers_create_time ON identity_providers (create_time, uid);
      CREATE INDEX identity_providers_update_time ON identity_providers (update_time, uid);

      CREATE TABLE account_associations (
        uid TEXT PRIMARY KEY REFERENCES groups (uid),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        amazon TEXT,
        google TEXT,
        azure TEXT,
        github TEXT,
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX account_associations_name ON account_associations (name, uid);
      CREATE INDEX account_associations_create_time ON account_associations (create_time, uid);
      CREATE INDEX account_associations_update_time ON account_associations (update_time, uid);
    `,
  },
  {
    description: "group invites",
    // Only the SHA-256 of a code is kept; the view leaves it out, so that reads never carry it.
    // An invite goes with its role (it could grant nothing) and, in deleteGroup, its group.
    sql: `
      CREATE TABLE group_invites (
        uid TEXT PRIMARY KEY,
        group_uid TEXT NOT NULL REFERENCES groups (uid),
        role_uid TEXT NOT NULL REFERENCES roles (uid) ON DELETE CASCADE,
        email TEXT NOT NULL,
        single_use INTEGER NOT NULL,
        code_hash TEXT NOT NULL UNIQUE,
        expiration_time INTEGER NOT NULL,
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX group_invites_group ON group_invites (group_uid, uid);
      CREATE INDEX group_invites_role ON group_invites (role_uid);
      CREATE INDEX group_invites_create_time ON group_invites (create_time, uid);
      CREATE INDEX group_invites_update_time ON group_invites (update_time, uid);

      CREATE VIEW group_invites_view AS
        SELECT v.uid, v.group_uid, v.role_uid, v.email, v.single_use, v.expiration_time,
          v.create_time, v.update_time, r.name AS role_name, r.description AS role_description
        FROM group_invites AS v JOIN roles AS r ON r.uid = v.role_uid;
    `,
  },
  {
    description: "descendant counts of groups",
    // How many groups lie strictly below each group, kept by createGroup and deleteGroup:
    // ListGroups' totalCount over a subtree reads it instead of counting the subtree's rows.
    sql: `
      ALTER TABLE groups ADD COLUMN descendant_count INTEGER NOT NULL DEFAULT 0;
      UPDATE groups SET descendant_count =
        (SELECT COUNT(*) FROM group_closure AS c WHERE c.ancestor = groups.uid AND c.depth > 0);
    `,
  },
  {
    description: "invite creators",
    // An invite grants with its creator's authority, checked again at redemption. Invites
    // made before creators were recorded have none ('') and are refused.
    sql: `
      ALTER TABLE group_invites ADD COLUMN creator_uid TEXT NOT NULL DEFAULT '';
      DROP VIEW group_invites_view;
      CREATE VIEW group_invites_view AS
        SELECT v.uid, v.group_uid, v.role_uid, v.email, v.single_use, v.expiration_time,
          v.create_time, v.update_time, v.creator_uid,
          r.name AS role_name, r.description AS role_description
        FROM group_invites AS v JOIN roles AS r ON r.uid = v.role_uid;
    `,
  },
  {
    description: "settings the server records for the commands",
    // serve records the URLs it serves under, so that bootstrap and token, run on the same
    // database without them, mint tokens that server accepts.
    sql: `
      CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
    `,
  },
  {
    description: "people's sign-in: logins in flight, codes, sessions, refresh tokens",
    // Secrets are stored as SHA-256 hashes. A session goes with its identity, and its codes
    // and refresh tokens with it.
    sql: `
      CREATE TABLE oauth_pending_logins (
        state_hash TEXT PRIMARY KEY,
        login TEXT NOT NULL,
        expire_time INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX oauth_pending_logins_expiry ON oauth_pending_logins (expire_time);
      CREATE TABLE oauth_sessions (
        id TEXT PRIMARY KEY,
        identity_uid TEXT NOT NULL REFERENCES identities (uid) ON DELETE CASCADE,
        client_id TEXT NOT NULL,
        create_time INTEGER NOT NULL,
        revoke_time INTEGER
      ) STRICT;
      CREATE INDEX oauth_sessions_identity ON oauth_sessions (identity_uid);
      CREATE TABLE oauth_codes (
        code_hash TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES oauth_sessions (id) ON DELETE CASCADE,
        redirect_uri TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        expire_time INTEGER NOT NULL,
        redeem_time INTEGER
      ) STRICT;
      CREATE INDEX oauth_codes_session ON oauth_codes (session_id);
      CREATE TABLE oauth_refresh_tokens (
        token_hash TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES oauth_sessions (id) ON DELETE CASCADE,
        expire_time INTEGER NOT NULL,
        use_time INTEGER
      ) STRICT;
      CREATE INDEX oauth_refresh_tokens_session ON oauth_refresh_tokens (session_id);
    `,
  },
  {
    description: "integer keys for the group closure",
    // Every closure row held two full uids (up to ~140 characters each at depth 6), twice with
    // its index: 4.8 of 6.2 GB at 1.1M groups. Groups get a small integer id (their rowid at
    // migration; an explicit column, because VACUUM may renumber rowids) and the closure
    // rows hold ids. group_closure_by_uid reads them back as uids, for tests and operators.
    sql: `
      ALTER TABLE groups ADD COLUMN id INTEGER;
      UPDATE groups SET id = rowid;
      CREATE UNIQUE INDEX groups_id ON groups (id);
      CREATE TABLE group_closure_ids (
        ancestor INTEGER NOT NULL REFERENCES groups (id),
        descendant INTEGER NOT NULL REFERENCES groups (id),
        depth INTEGER NOT NULL,
        PRIMARY KEY (ancestor, depth, descendant)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO group_closure_ids (ancestor, descendant, depth)
        SELECT a.id, d.id, c.depth FROM group_closure AS c
        JOIN groups AS a ON a.uid = c.ancestor JOIN groups AS d ON d.uid = c.descendant;
      DROP TABLE group_closure;
      ALTER TABLE group_closure_ids RENAME TO group_closure;
      CREATE UNIQUE INDEX group_closure_descendant ON group_closure (descendant, ancestor);
      CREATE VIEW group_closure_by_uid AS
        SELECT a.uid AS ancestor, d.uid AS descendant, c.depth AS depth
        FROM group_closure AS c JOIN groups AS a ON a.id = c.ancestor
        JOIN groups AS d ON d.id = c.descendant;
    `,
  },
  {
    description: "logins in flight live in the browser (a sealed cookie), not in the database",
    sql: "DROP TABLE oauth_pending_logins;",
  },
  {
    description: "groups keyed by their integer id, with integer parents",
    // At 1M groups every copy of a uid (about 140 characters at depth 6) cost 160 B a group,
    // and groups held seven: the row's uid and parent_uid, and the uid, (parent_uid, name),
    // (name, uid), (create_time, uid) and (update_time, uid) indexes. The table is rebuilt
    // with id as its INTEGER PRIMARY KEY (the rowid: no groups_id index, and VACUUM keeps it)
    // and parent_id in place of parent_uid, which parentOf(uid) gives back. The time indexes
    // hold the time alone (and the rowid): rows of one time, a few at most, are sorted by
    // uid when read. (name, uid) keeps its uid, so that a name shared by many groups is
    // still read in order. A parent that is gone gets -1, which the foreign key check after
    // the steps refuses. The views that name groups are made again over the new table.
    sql: `
      CREATE TABLE groups_new (
        id INTEGER PRIMARY KEY,
        uid TEXT NOT NULL UNIQUE,
        parent_id INTEGER REFERENCES groups_new (id),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        verified INTEGER NOT NULL DEFAULT 0,
        resource_limits TEXT NOT NULL DEFAULT '{}',
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL,
        descendant_count INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      INSERT INTO groups_new (id, uid, parent_id, name, description, verified, resource_limits,
          create_time, update_time, descendant_count)
        SELECT g.id, g.uid, CASE WHEN g.parent_uid IS NULL THEN NULL ELSE coalesce(p.id, -1) END,
          g.name, g.description, g.verified, g.resource_limits, g.create_time, g.update_time,
          g.descendant_count
        FROM groups AS g LEFT JOIN groups AS p ON p.uid = g.parent_uid
        ORDER BY g.id;
      DROP VIEW group_closure_by_uid;
      DROP VIEW role_bindings_view;
      DROP TABLE groups;
      ALTER TABLE groups_new RENAME TO groups;
      CREATE UNIQUE INDEX groups_parent_name ON groups (parent_id, name);
      CREATE INDEX groups_name ON groups (name, uid);
      CREATE INDEX groups_create_time ON groups (create_time);
      CREATE INDEX groups_update_time ON groups (update_time);
      CREATE VIEW group_closure_by_uid AS
        SELECT a.uid AS ancestor, d.uid AS descendant, c.depth AS depth
        FROM group_closure AS c JOIN groups AS a ON a.id = c.ancestor
        JOIN groups AS d ON d.id = c.descendant;
      CREATE VIEW group_parents AS
        SELECT g.uid, p.uid AS parent_uid FROM groups AS g LEFT JOIN groups AS p ON p.id = g.parent_id;
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
    `,
  },
  {
    description: "public repos",
    sql: "ALTER TABLE repos ADD COLUMN is_public INTEGER NOT NULL DEFAULT 0;",
  },
  {
    description: "the writer of each identity provider, whose authority grants its default role",
    // Providers written before have no recorded writer: their default role grants nothing
    // until someone who may grant it saves the provider again (as invites without a creator).
    sql: "ALTER TABLE identity_providers ADD COLUMN writer_uid TEXT NOT NULL DEFAULT '';",
  },
  {
    description: "sealed logins redeemed once, and people whose sign-in is unfinished",
    // A spent login is kept until the login itself expires. A note on a person says their
    // last sign-in was not completed by a code redemption: the purge deletes such people once
    // the note is old enough (src/auth/oauth/sign-in-purge.ts).
    sql: `
      CREATE TABLE oauth_spent_logins (
        state_hash TEXT PRIMARY KEY,
        expire_time INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX oauth_spent_logins_expiry ON oauth_spent_logins (expire_time);
      CREATE TABLE oauth_unfinished_people (
        identity_uid TEXT PRIMARY KEY REFERENCES identities (uid) ON DELETE CASCADE,
        note_time INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX oauth_unfinished_people_time ON oauth_unfinished_people (note_time);
      CREATE INDEX oauth_codes_expiry ON oauth_codes (expire_time);
      CREATE INDEX oauth_refresh_tokens_expiry ON oauth_refresh_tokens (expire_time);
    `,
  },
  {
    description: "the audit trail: one CloudEvent a change, written in the change's transaction",
    sql: `
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        -- The event as a child of its subject in the uid tree (subject/id): the list
        -- machinery's tree filters, cursor and scope work on it as on any resource.
        uid TEXT NOT NULL UNIQUE,
        group_uid TEXT NOT NULL,
        type TEXT NOT NULL,
        source TEXT NOT NULL,
        subject TEXT NOT NULL,
        time INTEGER NOT NULL,
        actor_uid TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX events_time ON events (time, seq);
      CREATE INDEX events_subject ON events (subject);
    `,
  },
  {
    // The JSON column is what a provider reads back; the table is the sign-in page's index
    // from a domain to the providers declaring it.
    description: "email domains of identity providers",
    sql: `
      ALTER TABLE identity_providers ADD COLUMN email_domains TEXT NOT NULL DEFAULT '[]';
      CREATE TABLE identity_provider_domains (
        domain TEXT NOT NULL,
        provider_uid TEXT NOT NULL REFERENCES identity_providers (uid) ON DELETE CASCADE,
        PRIMARY KEY (domain, provider_uid)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX identity_provider_domains_provider ON identity_provider_domains (provider_uid);
    `,
  },
  subscriptionsMigration,
  subscriptionBreakerMigration,
  registryNamespacesMigration,
  {
    // The sign-in lookups order matches by when each claim was made, not by the provider's
    // age: an old provider renamed, or given a domain, today claims it today. Existing claims
    // take their provider's last change, the latest they can have been made. A domain claim
    // is verified (verify_time) only by its DNS TXT record; check_time paces the checks.
    description: "claim times and verification of identity provider names and domains; idle people",
    sql: `
      ALTER TABLE identity_providers ADD COLUMN name_time INTEGER NOT NULL DEFAULT 0;
      UPDATE identity_providers SET name_time = update_time;
      CREATE INDEX identity_providers_name_time ON identity_providers (name, name_time, uid);
      ALTER TABLE identity_provider_domains ADD COLUMN claim_time INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE identity_provider_domains ADD COLUMN verify_time INTEGER;
      ALTER TABLE identity_provider_domains ADD COLUMN check_time INTEGER NOT NULL DEFAULT 0;
      UPDATE identity_provider_domains SET claim_time = (
        SELECT p.update_time FROM identity_providers AS p WHERE p.uid = provider_uid);
      CREATE INDEX identity_provider_domains_check ON identity_provider_domains (check_time)
        WHERE verify_time IS NULL;
      CREATE INDEX identities_people_seen ON identities (last_seen_time, uid)
        WHERE group_uid IS NULL;
    `,
  },
  {
    // Registry names spell a group's spaces as '-' (registryComponentOf): an organization
    // named with spaces takes the namespace so spelled, if free, the oldest first, as every
    // organization took its name's at creation.
    description: "registry namespaces of organizations named with spaces",
    sql: `
      INSERT INTO registry_namespaces (name, org_uid, claim_time)
        SELECT replace(name, ' ', '-'), uid, create_time FROM groups
        WHERE parent_id IS NULL AND instr(name, ' ') > 0 ORDER BY create_time, uid
        ON CONFLICT (name) DO NOTHING;
    `,
  },
];

/**
 * Bring the schema up to date: apply the steps beyond `PRAGMA user_version` in one immediate
 * transaction, so concurrent processes migrate once and a failed step leaves nothing behind.
 * Throws if the database is newer than this code.
 *
 * Foreign keys are off while the steps run (SQLite's procedure for rebuilding a table that
 * others reference: dropping the old one must not delete or refuse their rows), and every
 * key is checked before the commit: a step that breaks one fails the whole migration.
 * `PRAGMA foreign_keys` cannot change inside a transaction, so migrate is never called in one.
 */
export function migrate(db: Database, steps: readonly Migration[] = migrations): void {
  if (db.inTransaction) throw new Error("migrate cannot run inside a transaction");
  const enforced = db.pragma("foreign_keys", { simple: true }) === 1;
  if (enforced) db.pragma("foreign_keys = OFF");
  try {
    db.transaction(() => {
      const version = db.pragma("user_version", { simple: true }) as number;
      if (version > steps.length) {
        throw new Error(
          `database schema version ${version} is newer than this Gatehouse (${steps.length})`,
        );
      }
      if (version === steps.length) return;
      for (const [i, step] of steps.entries()) {
        if (i < version) continue;
        try {
          db.exec(step.sql);
        } catch (err) {
          throw new Error(`migration ${i + 1} (${step.description}) failed`, { cause: err });
        }
        // user_version lives in the database header, which this transaction also covers.
        db.pragma(`user_version = ${i + 1}`);
      }
      const broken = db.pragma("foreign_key_check") as { table: string; parent: string }[];
      if (broken.length > 0) {
        const first = broken[0]!;
        throw new Error(
          `after migrating to version ${steps.length}, ${broken.length} rows break a foreign key (first: ${first.table} -> ${first.parent}); the migration was undone`,
        );
      }
    }).immediate();
  } finally {
    if (enforced) db.pragma("foreign_keys = ON");
  }
}
