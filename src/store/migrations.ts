/**
 * The schema of both backends as one ordered list of steps. Each backend applies the steps it
 * has, in order, and records how many it applied (SQLite in `PRAGMA user_version`, PostgreSQL
 * in `gatehouse_schema`): its version N means its first N steps, so a step is never edited,
 * removed or moved once released, and a new one is appended at the END (a new table or a new
 * column is a new step; test/store/released-migrations.test.ts holds the released ones).
 *
 * A step is written once (`sql`), with the dialect's words where they differ (`d.key`,
 * `d.int64`, ... in `Dialect`), or, where the statements themselves differ, as one text per
 * dialect (`sqlite`, `pg`). `null` is a step one dialect never had: PostgreSQL came later, and
 * its first step is the whole schema SQLite's first twelve make; its groups kept their uid
 * parents, so SQLite's rebuild of them (step 14) is SQLite's alone.
 *
 * PostgreSQL's text columns that are compared, sorted or keyed are COLLATE "C": lists order
 * and compare bytewise, as SQLite does, and the uid range that stands for "strictly below G"
 * (`uid > 'G/' AND uid < 'G0'`) holds exactly the uids that start with `G/`. Times are
 * milliseconds since the epoch (INTEGER on SQLite, BIGINT on PostgreSQL).
 */

/** The words of one SQL dialect that a step written once needs. */
export interface Dialect {
  readonly name: "sqlite" | "pg";
  /** A text column that is compared, sorted or keyed (bytewise on both). */
  readonly key: string;
  /** A 64-bit integer: a time in milliseconds, a count. */
  readonly int64: string;
  /** A boolean column, and its false. */
  readonly bool: string;
  readonly false: string;
  /** What follows a CREATE TABLE's closing parenthesis. */
  readonly table: string;
  /** The same, for a table keyed by its primary key alone (no rowid on SQLite). */
  readonly keyedTable: string;
  /** `text` on this dialect only (an index or view only one of them needs). */
  only(dialect: "sqlite" | "pg", text: string): string;
}

const sqlite: Dialect = {
  name: "sqlite",
  key: "TEXT",
  int64: "INTEGER",
  bool: "INTEGER",
  false: "0",
  table: " STRICT",
  keyedTable: " STRICT, WITHOUT ROWID",
  only: (dialect, text) => (dialect === "sqlite" ? text : ""),
};

const pg: Dialect = {
  name: "pg",
  key: 'TEXT COLLATE "C"',
  int64: "BIGINT",
  bool: "BOOLEAN",
  false: "false",
  table: "",
  keyedTable: "",
  only: (dialect, text) => (dialect === "pg" ? text : ""),
};

/** The dialects, by backend. */
export const dialects = { sqlite, pg } as const;

/** One schema step: what it adds, and its text for each dialect. */
export type SchemaStep = { readonly description: string } & (
  | { readonly sql: string | ((d: Dialect) => string) }
  | { readonly sqlite: string | null; readonly pg: string | null }
);

/** A step as one backend applies it. */
export interface Migration {
  /** What the step adds, for error messages. */
  readonly description: string;
  readonly sql: string;
}

/** The steps `dialect` applies, in order: its version N is the first N of them. */
export function migrationsFor(dialect: "sqlite" | "pg"): Migration[] {
  const out: Migration[] = [];
  for (const step of schemaSteps) {
    const sql =
      "sql" in step
        ? typeof step.sql === "string"
          ? step.sql
          : step.sql(dialects[dialect])
        : step[dialect];
    if (sql !== null) out.push({ description: step.description, sql });
  }
  return out;
}

/** The schema of both backends, in order (see the top of this file). */
export const schemaSteps: readonly SchemaStep[] = [
  {
    description: "groups and their ancestor closure",
    // Roots store parent_uid NULL: the unique index then treats organizations as distinct (NULLs
    // never collide), so one organization's name never reveals another's, while siblings
    // below a group must differ in name.
    sqlite: `
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
    // PostgreSQL came later: its first step is the whole schema SQLite's steps 1 to 12 make.
    pg: `
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
    description: "signing keys and server secrets",
    sqlite: `
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
    pg: null,
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
    sqlite: `
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
    pg: null,
  },
  {
    description: "registry repos and tags",
    // A tag keeps its repo's group on the row, so that scope checks need no join.
    sqlite: `
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
    pg: null,
  },
  {
    description: "vulnerability advisories, their aliases and substring search",
    // seq is the rowid the trigram index refers to. search holds the lowercased advisory id,
    // aliases, artifact and component names, one a line, so that a substring never spans two.
    sqlite: `
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
    pg: null,
  },
  {
    description: "identity providers and account associations",
    // client_secret has its own column so that it never travels inside the oidc JSON the
    // records are read from by accident. default_role is a role uid or '' (no foreign key: a
    // built-in role row is reseeded at open). An account association's uid is its group's uid:
    // the primary key is the one-per-group rule.
    sqlite: `
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
    pg: null,
  },
  {
    description: "group invites",
    // Only the SHA-256 of a code is kept; the view leaves it out, so that reads never carry it.
    // An invite goes with its role (it could grant nothing) and, in deleteGroup, its group.
    sqlite: `
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
    pg: null,
  },
  {
    description: "descendant counts of groups",
    // How many groups lie strictly below each group, kept by createGroup and deleteGroup:
    // ListGroups' totalCount over a subtree reads it instead of counting the subtree's rows.
    sqlite: `
      ALTER TABLE groups ADD COLUMN descendant_count INTEGER NOT NULL DEFAULT 0;
      UPDATE groups SET descendant_count =
        (SELECT COUNT(*) FROM group_closure AS c WHERE c.ancestor = groups.uid AND c.depth > 0);
    `,
    pg: null,
  },
  {
    description: "invite creators",
    // An invite grants with its creator's authority, checked again at redemption. Invites
    // made before creators were recorded have none ('') and are refused.
    sqlite: `
      ALTER TABLE group_invites ADD COLUMN creator_uid TEXT NOT NULL DEFAULT '';
      DROP VIEW group_invites_view;
      CREATE VIEW group_invites_view AS
        SELECT v.uid, v.group_uid, v.role_uid, v.email, v.single_use, v.expiration_time,
          v.create_time, v.update_time, v.creator_uid,
          r.name AS role_name, r.description AS role_description
        FROM group_invites AS v JOIN roles AS r ON r.uid = v.role_uid;
    `,
    pg: null,
  },
  {
    description: "settings the server records for the commands",
    // serve records the URLs it serves under, so that bootstrap and token, run on the same
    // database without them, mint tokens that server accepts.
    sqlite: `
      CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
    `,
    pg: null,
  },
  {
    description: "people's sign-in: logins in flight, codes, sessions, refresh tokens",
    // Secrets are stored as SHA-256 hashes. A session goes with its identity, and its codes
    // and refresh tokens with it.
    sqlite: `
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
    pg: null,
  },
  {
    description: "integer keys for the group closure",
    // Every closure row held two full uids (up to ~140 characters each at depth 6), twice with
    // its index: 4.8 of 6.2 GB at 1.1M groups. Groups get a small integer id (their rowid at
    // migration; an explicit column, because VACUUM may renumber rowids) and the closure
    // rows hold ids. group_closure_by_uid reads them back as uids, for tests and operators.
    sqlite: `
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
    pg: null,
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
    sqlite: `
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
    pg: null,
  },
  {
    description: "public repos",
    sql: (d) => `ALTER TABLE repos ADD COLUMN is_public ${d.bool} NOT NULL DEFAULT ${d.false};`,
  },
  {
    description: "the writer of each identity provider, whose authority grants its default role",
    // Providers written before have no recorded writer: their default role grants nothing
    // until someone who may grant it saves the provider again (as invites without a creator).
    sql: (d) =>
      `ALTER TABLE identity_providers ADD COLUMN writer_uid ${d.key} NOT NULL DEFAULT '';`,
  },
  {
    description: "sealed logins redeemed once, and people whose sign-in is unfinished",
    // A spent login is kept until the login itself expires. A note on a person says their
    // last sign-in was not completed by a code redemption: the purge deletes such people once
    // the note is old enough (src/auth/oauth/sign-in-purge.ts).
    sql: (d) => `
      CREATE TABLE oauth_spent_logins (
        state_hash ${d.key} PRIMARY KEY,
        expire_time ${d.int64} NOT NULL
      )${d.table};
      CREATE INDEX oauth_spent_logins_expiry ON oauth_spent_logins (expire_time);
      CREATE TABLE oauth_unfinished_people (
        identity_uid ${d.key} PRIMARY KEY REFERENCES identities (uid) ON DELETE CASCADE,
        note_time ${d.int64} NOT NULL
      )${d.table};
      CREATE INDEX oauth_unfinished_people_time ON oauth_unfinished_people (note_time);
      CREATE INDEX oauth_codes_expiry ON oauth_codes (expire_time);
      CREATE INDEX oauth_refresh_tokens_expiry ON oauth_refresh_tokens (expire_time);
    `,
  },
  {
    description: "the audit trail: one CloudEvent a change, written in the change's transaction",
    // The event is a child of its subject in the uid tree (subject/id): the list machinery's
    // tree filters, cursor and scope work on it as on any resource. SQLite's table was made
    // without STRICT; PostgreSQL's uid prefix searches want their own index.
    sqlite: `
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
    pg: `
      CREATE TABLE events (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT COLLATE "C" NOT NULL UNIQUE,
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
    // The JSON column is what a provider reads back; the table is the sign-in page's index
    // from a domain to the providers declaring it.
    description: "email domains of identity providers",
    sql: (d) => `
      ALTER TABLE identity_providers ADD COLUMN email_domains ${d.key} NOT NULL DEFAULT '[]';
      CREATE TABLE identity_provider_domains (
        domain ${d.key} NOT NULL,
        provider_uid ${d.key} NOT NULL REFERENCES identity_providers (uid) ON DELETE CASCADE,
        PRIMARY KEY (domain, provider_uid)
      )${d.keyedTable};
      CREATE INDEX identity_provider_domains_provider ON identity_provider_domains (provider_uid);
    `,
  },
  {
    // A subscription goes with its group (a group's delete takes what lives only in it), its
    // deliveries with it. A delivery names its event by id, without a foreign key: retention
    // may prune an event, never blocked by a delivery.
    description: "webhook subscriptions and their outbox of deliveries",
    sql: (d) => `
      CREATE TABLE webhook_subscriptions (
        uid ${d.key} PRIMARY KEY,
        group_uid ${d.key} NOT NULL REFERENCES groups (uid) ON DELETE CASCADE,
        -- The organization: an event is matched against its organization's subscriptions.
        org_uid ${d.key} NOT NULL,
        name ${d.key} NOT NULL,
        description TEXT NOT NULL,
        sink TEXT NOT NULL,
        event_types TEXT NOT NULL,
        secret TEXT NOT NULL,
        create_time ${d.int64} NOT NULL,
        update_time ${d.int64} NOT NULL,
        delivered_count ${d.int64} NOT NULL DEFAULT 0,
        failed_attempts ${d.int64} NOT NULL DEFAULT 0,
        abandoned_count ${d.int64} NOT NULL DEFAULT 0,
        last_attempt_time ${d.int64} NOT NULL DEFAULT 0,
        last_success_time ${d.int64} NOT NULL DEFAULT 0,
        last_status INTEGER NOT NULL DEFAULT 0,
        last_error TEXT NOT NULL DEFAULT ''
      )${d.table};
      CREATE UNIQUE INDEX webhook_subscriptions_name ON webhook_subscriptions (group_uid, name);
      CREATE INDEX webhook_subscriptions_org ON webhook_subscriptions (org_uid);
      ${d.only("pg", "CREATE INDEX webhook_subscriptions_uid ON webhook_subscriptions (uid text_pattern_ops);")}
      CREATE INDEX webhook_subscriptions_create_time ON webhook_subscriptions (create_time, uid);
      CREATE INDEX webhook_subscriptions_update_time ON webhook_subscriptions (update_time, uid);

      CREATE TABLE webhook_deliveries (
        id ${d.key} PRIMARY KEY,
        subscription_uid ${d.key} NOT NULL REFERENCES webhook_subscriptions (uid) ON DELETE CASCADE,
        event_id ${d.key} NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_time ${d.int64} NOT NULL,
        -- Who holds the delivery while sending it, and until when ('' and 0: nobody).
        lease ${d.key} NOT NULL DEFAULT '',
        lease_until ${d.int64} NOT NULL DEFAULT 0
      )${d.table};
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
  },
  {
    // Fair delivery (docs/events.md "Fair delivery"): each subscription's circuit breaker (its
    // failures in a row, and until when its deliveries are paused), an index on the leases
    // (the claim counts the attempts in flight per subscription and organization, across
    // servers) and one on a subscription's deliveries by due time (the claim takes the oldest
    // of each). PostgreSQL expands a view's * when the view is made: it makes it again.
    description: "webhook circuit breakers and fair claims",
    sql: (d) => `
      ALTER TABLE webhook_subscriptions ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE webhook_subscriptions ADD COLUMN paused_until ${d.int64} NOT NULL DEFAULT 0;
      CREATE INDEX webhook_deliveries_lease ON webhook_deliveries (lease_until);
      DROP INDEX webhook_deliveries_subscription;
      CREATE INDEX webhook_deliveries_subscription
        ON webhook_deliveries (subscription_uid, next_attempt_time);
      ${d.only(
        "pg",
        `DROP VIEW webhook_subscriptions_with_pending;
      CREATE VIEW webhook_subscriptions_with_pending AS
        SELECT s.*, (SELECT count(*) FROM webhook_deliveries d WHERE d.subscription_uid = s.uid)
          AS pending
        FROM webhook_subscriptions s;`,
      )}
    `,
  },
  {
    // Registry namespaces and the organizations that hold them (ops/registry-namespaces.ts).
    // Each organization name existing at the upgrade is held by the oldest organization of
    // that name (first created; equal times by uid): exactly the organization the registry
    // resolved it to before, so no registry name changes owner on upgrade. The dialects find
    // the roots and the first of each name their own way.
    description: "registry namespaces held by organizations",
    sqlite: `
      CREATE TABLE registry_namespaces (
        name TEXT PRIMARY KEY,
        org_uid TEXT NOT NULL REFERENCES groups (uid),
        claim_time INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX registry_namespaces_org ON registry_namespaces (org_uid);
      INSERT INTO registry_namespaces (name, org_uid, claim_time)
        SELECT name, uid, create_time FROM (
          SELECT name, uid, create_time,
            row_number() OVER (PARTITION BY name ORDER BY create_time, uid) AS n
          FROM groups WHERE parent_id IS NULL
        ) WHERE n = 1;
    `,
    pg: `
      CREATE TABLE registry_namespaces (
        name TEXT COLLATE "C" PRIMARY KEY,
        org_uid TEXT COLLATE "C" NOT NULL REFERENCES groups (uid),
        claim_time BIGINT NOT NULL
      );
      CREATE INDEX registry_namespaces_org ON registry_namespaces (org_uid);
      INSERT INTO registry_namespaces (name, org_uid, claim_time)
        SELECT DISTINCT ON (name) name, uid, create_time FROM groups
        WHERE parent_uid IS NULL ORDER BY name, create_time, uid;
    `,
  },
  {
    // The sign-in lookups order matches by when each claim was made, not by the provider's
    // age: an old provider renamed, or given a domain, today claims it today. Existing claims
    // take their provider's last change, the latest they can have been made. A domain claim
    // is verified (verify_time) only by its DNS TXT record; check_time paces the checks.
    description: "claim times and verification of identity provider names and domains; idle people",
    sql: (d) => `
      ALTER TABLE identity_providers ADD COLUMN name_time ${d.int64} NOT NULL DEFAULT 0;
      UPDATE identity_providers SET name_time = update_time;
      CREATE INDEX identity_providers_name_time ON identity_providers (name, name_time, uid);
      ALTER TABLE identity_provider_domains ADD COLUMN claim_time ${d.int64} NOT NULL DEFAULT 0;
      ALTER TABLE identity_provider_domains ADD COLUMN verify_time ${d.int64};
      ALTER TABLE identity_provider_domains ADD COLUMN check_time ${d.int64} NOT NULL DEFAULT 0;
      ${
        d.name === "sqlite"
          ? `UPDATE identity_provider_domains SET claim_time = (
        SELECT p.update_time FROM identity_providers AS p WHERE p.uid = provider_uid);`
          : `UPDATE identity_provider_domains AS d SET claim_time = p.update_time
        FROM identity_providers AS p WHERE p.uid = d.provider_uid;`
      }
      CREATE INDEX identity_provider_domains_check ON identity_provider_domains (check_time)
        WHERE verify_time IS NULL;
      CREATE INDEX identities_people_seen ON identities (last_seen_time, uid)
        WHERE group_uid IS NULL;
    `,
  },
  {
    // An event's subject is a random uid, so each append wrote a leaf page of this index
    // somewhere in its middle, one more page in the WAL at every commit. childrenOf on events
    // reads the uid index instead (event-rows.ts: an event's uid is subject/id). On
    // PostgreSQL, events_uid (text_pattern_ops) also repeated the uid's own unique index,
    // whose COLLATE "C" already serves the list SQL's uid ranges.
    description: "narrower audit trail: no index on events.subject",
    sqlite: "DROP INDEX IF EXISTS events_subject;",
    pg: `
      DROP INDEX IF EXISTS events_subject;
      DROP INDEX IF EXISTS events_uid;
    `,
  },
  {
    // Registry names spell a group's spaces as '-' (registryComponentOf): an organization
    // named with spaces takes the namespace so spelled, if free, the oldest first, as every
    // organization took its name's at creation.
    description: "registry namespaces of organizations named with spaces",
    sqlite: `
      INSERT INTO registry_namespaces (name, org_uid, claim_time)
        SELECT replace(name, ' ', '-'), uid, create_time FROM groups
        WHERE parent_id IS NULL AND instr(name, ' ') > 0 ORDER BY create_time, uid
        ON CONFLICT (name) DO NOTHING;
    `,
    pg: `
      INSERT INTO registry_namespaces (name, org_uid, claim_time)
        SELECT DISTINCT ON (replace(name, ' ', '-')) replace(name, ' ', '-'), uid, create_time
        FROM groups WHERE parent_uid IS NULL AND strpos(name, ' ') > 0
        ORDER BY replace(name, ' ', '-'), create_time, uid
        ON CONFLICT (name) DO NOTHING;
    `,
  },
  {
    // A team lives in a group (its uid a child of the group's) and holds identities of its
    // organization. team_members' (identity, team) index serves the access queries, which
    // start from the caller's identity; a member goes with its team or its identity. The view
    // adds the member count a Team shows.
    description: "teams and their members",
    sql: (d) => `
      CREATE TABLE teams (
        uid ${d.key} PRIMARY KEY,
        group_uid ${d.key} NOT NULL REFERENCES groups (uid),
        name ${d.key} NOT NULL,
        description TEXT NOT NULL,
        create_time ${d.int64} NOT NULL,
        update_time ${d.int64} NOT NULL
      )${d.table};
      CREATE UNIQUE INDEX teams_group_name ON teams (group_uid, name);
      CREATE INDEX teams_name ON teams (name, uid);
      CREATE INDEX teams_create_time ON teams (create_time, uid);
      CREATE INDEX teams_update_time ON teams (update_time, uid);
      CREATE TABLE team_members (
        team_uid ${d.key} NOT NULL REFERENCES teams (uid) ON DELETE CASCADE,
        identity_uid ${d.key} NOT NULL REFERENCES identities (uid) ON DELETE CASCADE,
        create_time ${d.int64} NOT NULL,
        PRIMARY KEY (team_uid, identity_uid)
      )${d.keyedTable};
      CREATE INDEX team_members_identity ON team_members (identity_uid, team_uid);
      CREATE VIEW teams_view AS
        SELECT t.*, (SELECT count(*) FROM team_members AS m WHERE m.team_uid = t.uid)
          AS member_count
        FROM teams AS t;
    `,
  },
  {
    // A binding grants its role to an identity or to a team (exactly one: identity_uid is
    // NULL for a team's). role_bindings_team serves the access queries' second half, which
    // starts from the caller's teams (team_members_identity). A team's bindings go with it.
    // SQLite cannot drop a NOT NULL: its table is rebuilt, copying the columns it had.
    description: "role bindings to teams",
    sqlite: `
      CREATE TABLE role_bindings_new (
        uid TEXT PRIMARY KEY,
        group_uid TEXT NOT NULL REFERENCES groups (uid),
        identity_uid TEXT REFERENCES identities (uid),
        team_uid TEXT REFERENCES teams (uid) ON DELETE CASCADE,
        role_uid TEXT NOT NULL REFERENCES roles (uid),
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL,
        CHECK ((identity_uid IS NULL) <> (team_uid IS NULL))
      ) STRICT;
      INSERT INTO role_bindings_new (uid, group_uid, identity_uid, role_uid, create_time,
          update_time)
        SELECT uid, group_uid, identity_uid, role_uid, create_time, update_time
        FROM role_bindings;
      DROP VIEW role_bindings_view;
      DROP TABLE role_bindings;
      ALTER TABLE role_bindings_new RENAME TO role_bindings;
      CREATE UNIQUE INDEX role_bindings_identity ON role_bindings (identity_uid, group_uid, role_uid);
      CREATE UNIQUE INDEX role_bindings_team ON role_bindings (team_uid, group_uid, role_uid);
      CREATE INDEX role_bindings_group ON role_bindings (group_uid, uid);
      CREATE INDEX role_bindings_role ON role_bindings (role_uid);
      CREATE INDEX role_bindings_create_time ON role_bindings (create_time, uid);
      CREATE INDEX role_bindings_update_time ON role_bindings (update_time, uid);
      CREATE VIEW role_bindings_view AS
        SELECT b.uid, b.group_uid, b.identity_uid, b.team_uid, b.role_uid, b.create_time,
          b.update_time,
          r.name AS role_name, r.description AS role_description,
          i.name AS identity_name, i.description AS identity_description,
          i.issuer AS identity_issuer, i.subject AS identity_subject,
          t.name AS team_name, t.description AS team_description,
          g.name AS group_name, g.description AS group_description
        FROM role_bindings AS b
          JOIN roles AS r ON r.uid = b.role_uid
          LEFT JOIN identities AS i ON i.uid = b.identity_uid
          LEFT JOIN teams AS t ON t.uid = b.team_uid
          JOIN groups AS g ON g.uid = b.group_uid;
    `,
    pg: `
      ALTER TABLE role_bindings ALTER COLUMN identity_uid DROP NOT NULL;
      ALTER TABLE role_bindings
        ADD COLUMN team_uid TEXT COLLATE "C" REFERENCES teams (uid) ON DELETE CASCADE;
      ALTER TABLE role_bindings ADD CONSTRAINT role_bindings_one_holder
        CHECK ((identity_uid IS NULL) <> (team_uid IS NULL));
      CREATE UNIQUE INDEX role_bindings_team ON role_bindings (team_uid, group_uid, role_uid);
      DROP VIEW role_bindings_view;
      CREATE VIEW role_bindings_view AS
        SELECT b.uid, b.group_uid, b.identity_uid, b.team_uid, b.role_uid, b.create_time,
          b.update_time,
          r.name AS role_name, r.description AS role_description,
          i.name AS identity_name, i.description AS identity_description,
          i.issuer AS identity_issuer, i.subject AS identity_subject,
          t.name AS team_name, t.description AS team_description,
          g.name AS group_name, g.description AS group_description
        FROM role_bindings AS b
          JOIN roles AS r ON r.uid = b.role_uid
          LEFT JOIN identities AS i ON i.uid = b.identity_uid
          LEFT JOIN teams AS t ON t.uid = b.team_uid
          JOIN groups AS g ON g.uid = b.group_uid;
    `,
  },
  {
    // Which teams an organization provider's groups claim puts people in, as JSON:
    // [{group, teamUid}] (sign-ins read it with the provider; nothing looks it up).
    description: "identity provider group mappings",
    sql: "ALTER TABLE identity_providers ADD COLUMN group_mappings TEXT NOT NULL DEFAULT '[]';",
  },
  {
    // A binding may expire: past expire_time it grants nothing (the access queries compare it
    // to the clock) and the expiry sweep deletes it. NULL: until revoked. The view is
    // re-created with the column last, keeping the team columns of "role bindings to teams"
    // (a later step re-creating the view keeps them all).
    description: "role binding expiry",
    sql: (d) => `
      ALTER TABLE role_bindings ADD COLUMN expire_time ${d.int64};
      CREATE INDEX role_bindings_expire_time ON role_bindings (expire_time)
        WHERE expire_time IS NOT NULL;
      DROP VIEW role_bindings_view;
      CREATE VIEW role_bindings_view AS
        SELECT b.uid, b.group_uid, b.identity_uid, b.team_uid, b.role_uid, b.create_time,
          b.update_time,
          r.name AS role_name, r.description AS role_description,
          i.name AS identity_name, i.description AS identity_description,
          i.issuer AS identity_issuer, i.subject AS identity_subject,
          t.name AS team_name, t.description AS team_description,
          g.name AS group_name, g.description AS group_description,
          b.expire_time
        FROM role_bindings AS b
          JOIN roles AS r ON r.uid = b.role_uid
          LEFT JOIN identities AS i ON i.uid = b.identity_uid
          LEFT JOIN teams AS t ON t.uid = b.team_uid
          JOIN groups AS g ON g.uid = b.group_uid;
    `,
  },
  {
    // The OAuth device authorization grant (RFC 8628, `gatehouse auth login --headless`): a
    // device code the CLI polls with and the user code a person approves elsewhere, both as
    // hashes. A session starts only when the approved code is redeemed.
    description: "device authorization codes",
    sql: (d) => `
      CREATE TABLE oauth_device_codes (
        device_code_hash ${d.key} PRIMARY KEY,
        user_code_hash ${d.key} NOT NULL UNIQUE,
        client_id TEXT NOT NULL,
        provider TEXT NOT NULL,
        interval_ms ${d.int64} NOT NULL,
        expire_time ${d.int64} NOT NULL,
        poll_time ${d.int64},
        status TEXT NOT NULL,
        identity_uid ${d.key} REFERENCES identities (uid) ON DELETE CASCADE,
        create_time ${d.int64} NOT NULL
      )${d.table};
      CREATE INDEX oauth_device_codes_expiry ON oauth_device_codes (expire_time);
    `,
  },
  {
    // ListGroups by description (order_by on any sortable field, issue 42): without an index
    // a page of a 100k-group organization sorted every group, 285 ms against 0.3 ms with it
    // (bench/order-by.ts). Groups are what grows that large; other fields sort their matches.
    description: "groups ordered by description",
    sql: "CREATE INDEX IF NOT EXISTS groups_description ON groups (description, uid);",
  },
  {
    // How people came into an organization (ops/people.ts): through one of its identity
    // providers (so a person who holds no role yet is still one of its people), an invite, or
    // SCIM; the first way in per group and kind. Gone with the person or the group.
    description: "how people came into organizations",
    sqlite: `
      CREATE TABLE person_origins (
        identity_uid TEXT NOT NULL REFERENCES identities (uid) ON DELETE CASCADE,
        group_uid TEXT NOT NULL REFERENCES groups (uid) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        source_uid TEXT NOT NULL,
        create_time INTEGER NOT NULL,
        PRIMARY KEY (identity_uid, group_uid, kind)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX person_origins_group ON person_origins (group_uid);
    `,
    pg: `
      CREATE TABLE person_origins (
        identity_uid TEXT COLLATE "C" NOT NULL REFERENCES identities (uid) ON DELETE CASCADE,
        group_uid TEXT COLLATE "C" NOT NULL REFERENCES groups (uid) ON DELETE CASCADE,
        kind TEXT COLLATE "C" NOT NULL,
        source_uid TEXT COLLATE "C" NOT NULL,
        create_time BIGINT NOT NULL,
        PRIMARY KEY (identity_uid, group_uid, kind)
      );
      CREATE INDEX person_origins_group ON person_origins (group_uid);
    `,
  },
  {
    // SCIM 2.0 provisioning (src/scim/): an organization's connection is the hash of its
    // bearer token (the token is shown once); its users are the directory's view of the
    // organization's people, matched to an identity when one signs in; a cutoff ends every
    // token of a deprovisioned person issued before it, on every replica (the access cache).
    // A SCIM Group is a team (the teams step) of the organization's root; its members are
    // SCIM users, whose matched people are the team's members while the user is active.
    description: "SCIM connections, users, groups and token cutoffs",
    sql: (d) => `
      CREATE TABLE scim_connections (
        org_uid ${d.key} PRIMARY KEY,
        token_hash ${d.key} NOT NULL UNIQUE,
        creator_uid ${d.key} NOT NULL,
        create_time ${d.int64} NOT NULL,
        use_time ${d.int64} NOT NULL
      )${d.keyedTable};
      CREATE TABLE scim_users (
        org_uid ${d.key} NOT NULL,
        id ${d.key} NOT NULL,
        user_name TEXT NOT NULL,
        user_name_key ${d.key} NOT NULL,
        external_id ${d.key} NOT NULL,
        email_key ${d.key} NOT NULL,
        display_name TEXT NOT NULL,
        identity_uid ${d.key} NOT NULL,
        active ${d.int64} NOT NULL,
        version ${d.int64} NOT NULL,
        resource TEXT NOT NULL,
        create_time ${d.int64} NOT NULL,
        update_time ${d.int64} NOT NULL,
        PRIMARY KEY (org_uid, id)
      )${d.keyedTable};
      CREATE UNIQUE INDEX scim_users_user_name ON scim_users (org_uid, user_name_key);
      CREATE INDEX scim_users_external_id ON scim_users (org_uid, external_id);
      CREATE INDEX scim_users_identity ON scim_users (identity_uid);
      CREATE TABLE identity_token_cutoffs (
        identity_uid ${d.key} PRIMARY KEY,
        cutoff_time ${d.int64} NOT NULL
      )${d.keyedTable};
      CREATE TABLE scim_groups (
        team_uid ${d.key} PRIMARY KEY,
        org_uid ${d.key} NOT NULL,
        external_id ${d.key} NOT NULL,
        version ${d.int64} NOT NULL
      )${d.keyedTable};
      CREATE INDEX scim_groups_org ON scim_groups (org_uid, external_id);
      CREATE TABLE scim_group_members (
        team_uid ${d.key} NOT NULL,
        user_id ${d.key} NOT NULL,
        PRIMARY KEY (team_uid, user_id)
      )${d.keyedTable};
      CREATE INDEX scim_group_members_user ON scim_group_members (user_id, team_uid);
    `,
  },
  {
    // An identity's request for a role at a group for a while, and its answer. It goes with
    // its group, its role and its requester (it could grant nothing); a pending request past
    // expiration_time has lapsed, whether or not the sweep has marked it 'expired' yet.
    description: "access requests",
    sql: (d) => `
      CREATE TABLE access_requests (
        uid ${d.key} PRIMARY KEY,
        group_uid ${d.key} NOT NULL REFERENCES groups (uid) ON DELETE CASCADE,
        role_uid ${d.key} NOT NULL REFERENCES roles (uid) ON DELETE CASCADE,
        requester_uid ${d.key} NOT NULL REFERENCES identities (uid) ON DELETE CASCADE,
        duration_ms ${d.int64} NOT NULL,
        reason TEXT NOT NULL,
        state ${d.key} NOT NULL,
        expiration_time ${d.int64} NOT NULL,
        reviewer_uid ${d.key} NOT NULL,
        review_reason TEXT NOT NULL,
        role_binding_uid ${d.key} NOT NULL,
        grant_expire_time ${d.int64},
        create_time ${d.int64} NOT NULL,
        update_time ${d.int64} NOT NULL
      )${d.table};
      CREATE INDEX access_requests_group ON access_requests (group_uid, uid);
      CREATE INDEX access_requests_role ON access_requests (role_uid);
      CREATE INDEX access_requests_requester ON access_requests (requester_uid);
      CREATE INDEX access_requests_pending ON access_requests (expiration_time)
        WHERE state = 'pending';
      CREATE INDEX access_requests_create_time ON access_requests (create_time, uid);
      CREATE INDEX access_requests_update_time ON access_requests (update_time, uid);
      CREATE VIEW access_requests_view AS
        SELECT a.uid, a.group_uid, a.role_uid, a.requester_uid, a.duration_ms, a.reason,
          a.state, a.expiration_time, a.reviewer_uid, a.review_reason, a.role_binding_uid,
          a.grant_expire_time, a.create_time, a.update_time,
          r.name AS role_name, r.description AS role_description,
          g.name AS group_name, g.description AS group_description,
          i.name AS requester_name, i.description AS requester_description,
          i.subject AS requester_subject, i.issuer AS requester_issuer
        FROM access_requests AS a
          JOIN roles AS r ON r.uid = a.role_uid
          JOIN groups AS g ON g.uid = a.group_uid
          JOIN identities AS i ON i.uid = a.requester_uid;
    `,
  },
  {
    // A SCIM user's DELETE leaves a tombstone of who it stood for (its matched person, its
    // externalId, its email): the directory deleted them, so a later sign-in through the
    // organization's identity provider is refused as an inactive user's is (src/scim/
    // scim-standing.ts); a user the directory creates again for them lets them in again.
    description: "SCIM deleted-user tombstones",
    sql: (d) => `
      CREATE TABLE scim_deleted_users (
        org_uid ${d.key} NOT NULL,
        id ${d.key} NOT NULL,
        identity_uid ${d.key} NOT NULL,
        external_id ${d.key} NOT NULL,
        email_key ${d.key} NOT NULL,
        delete_time ${d.int64} NOT NULL,
        PRIMARY KEY (org_uid, id)
      )${d.keyedTable};
      CREATE INDEX scim_deleted_users_identity ON scim_deleted_users (org_uid, identity_uid);
      CREATE INDEX scim_deleted_users_external_id ON scim_deleted_users (org_uid, external_id);
      CREATE INDEX scim_deleted_users_email ON scim_deleted_users (org_uid, email_key);
      CREATE INDEX scim_users_org_identity ON scim_users (org_uid, identity_uid);
      CREATE INDEX scim_users_email ON scim_users (org_uid, email_key);
    `,
  },
  {
    // A page of events is ordered by (time, uid) and resumes after a (time, uid) cursor
    // (list-clauses.ts); on (time, seq) every page read its time range again from its start
    // and sorted each millisecond's events by uid (bench/event-pages.ts: an export of 20,000
    // events 1.0-1.3 s on SQLite, 0.1 s after). On (time, uid) a page is a seek and a walk
    // of the page. It replaces (time, seq), so an append still writes one index at the table's
    // end (time grows); the retention prune walks it in the same order (pruneEventsSql).
    description: "events paged through their (time, uid) order",
    sql: `
      CREATE INDEX events_time_uid ON events (time, uid);
      DROP INDEX IF EXISTS events_time;
    `,
  },
  {
    // The id index wrote a B-tree of its own at every append (a UUIDv7, at its end) for one
    // reader: the webhook claim's join from a delivery to its event. A delivery now names its
    // event's uid too (filled here for those pending), and the claim joins on the uid's
    // unique index, which the list SQL's tree filters need anyway: an event's uid
    // (subject/id) ends with its id, so it is unique as the id was. SQLite cannot drop a
    // column's UNIQUE: the table is made again, the same columns and rows (seq kept).
    description: "events without an index on id; deliveries name their event's uid",
    sqlite: `
      ALTER TABLE webhook_deliveries ADD COLUMN event_uid TEXT NOT NULL DEFAULT '';
      UPDATE webhook_deliveries
        SET event_uid = COALESCE((SELECT e.uid FROM events AS e WHERE e.id = event_id), '');
      CREATE TABLE events_next (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        uid TEXT NOT NULL UNIQUE,
        group_uid TEXT NOT NULL,
        type TEXT NOT NULL,
        source TEXT NOT NULL,
        subject TEXT NOT NULL,
        time INTEGER NOT NULL,
        actor_uid TEXT NOT NULL,
        data TEXT NOT NULL
      );
      INSERT INTO events_next (seq, id, uid, group_uid, type, source, subject, time, actor_uid, data)
        SELECT seq, id, uid, group_uid, type, source, subject, time, actor_uid, data FROM events;
      DROP TABLE events;
      ALTER TABLE events_next RENAME TO events;
      CREATE INDEX events_time_uid ON events (time, uid);
    `,
    pg: `
      ALTER TABLE webhook_deliveries ADD COLUMN event_uid TEXT COLLATE "C" NOT NULL DEFAULT '';
      UPDATE webhook_deliveries AS d SET event_uid = e.uid FROM events AS e WHERE e.id = d.event_id;
      ALTER TABLE events DROP CONSTRAINT IF EXISTS events_id_key;
    `,
  },
];
