import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { openPgDb, type PgDb, pgFailures } from "../../src/store/postgres/pg-db.js";
import { createPostgresStore, type PostgresStore } from "../../src/store/postgres/pg-store.js";
import { StoreError } from "../../src/store/store.js";
import { newRootUid } from "../../src/uid.js";
import { newPgDatabase } from "../helpers/postgres.js";
import {
  createDatabase,
  type RestartablePostgres,
  startRestartablePostgres,
} from "../helpers/replicas.js";
import { restCall } from "../helpers/rest-client.js";
import {
  postgresBackend,
  startTestServer,
  type TestOrg,
  useTestServer,
} from "../helpers/test-server.js";

// PostgreSQL stalled or failing, as docs/postgres.md promises:
// - frozen (SIGSTOP: connections open, nothing answers): every wait of a call (a pooled
//   connection, a statement, the commit) ends at the call timeout (GATEHOUSE_DB_TIMEOUT_MS),
//   and the call answers UNAVAILABLE while the stall lasts; /readyz answers 503 within its
//   own second; calls succeed again once PostgreSQL runs;
// - every connection-level failure class is UNAVAILABLE (the table pgFailures), each raised
//   by a real PostgreSQL;
// - out of disk: UNAVAILABLE (STORAGE_FULL) and /readyz 503, as on SQLite.
// The timeouts are set small; nothing is timed but "answered before the stall ended".

/** A statement that makes PostgreSQL fail with SQLSTATE `code`. */
const raise = (code: string) =>
  `DO $$ BEGIN RAISE EXCEPTION 'injected failure' USING ERRCODE = '${code}'; END $$`;

/** A SQLSTATE of each entry: the entry's own, or its class's generic one ("08" -> "08000"). */
const sample = (state: string) => (state.endsWith("*") ? `${state.slice(0, 2)}000` : state);

describe("the SQLSTATE table", () => {
  let db: PgDb;
  beforeAll(async () => {
    db = openPgDb(await newPgDatabase(), { listen: false, maxAttempts: 2 });
  });
  afterAll(() => db?.close());

  /** What a failing statement comes out as, alone and inside a write transaction. */
  async function failures(code: string): Promise<unknown[]> {
    const alone = await db.sql.run(raise(code)).catch((e: unknown) => e);
    const inWrite = await db.write((sql) => sql.run(raise(code))).catch((e: unknown) => e);
    return [alone, inWrite];
  }

  it.each(pgFailures.map((f) => [sample(f.state), f] as const))("%s is %s", async (code, f) => {
    for (const err of await failures(code)) {
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).kind).toBe(f.kind);
      expect((err as StoreError).message).toBe(f.message);
    }
  });

  it("maps every connection-level class to unavailable", () => {
    for (const state of ["08*", "25P03", "25P04", "53*", "57*", "57014", "58*"]) {
      expect(pgFailures.find((f) => f.state === state)?.kind, state).toBe("unavailable");
    }
  });

  it("leaves any other SQLSTATE (a bug in our SQL) unmapped: INTERNAL", async () => {
    for (const err of await failures("42601")) {
      expect(err).not.toBeInstanceOf(StoreError);
      expect((err as { code?: string }).code).toBe("42601");
    }
  });
});

describe("PostgreSQL out of disk", () => {
  let org: TestOrg;
  let admin: pg.Client;
  const ts = useTestServer({}, { backend: postgresBackend });
  beforeAll(async () => {
    org = await ts.makeOrg("full");
    admin = new pg.Client({ connectionString: ts.config.databaseUrl });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
  });

  const create = (name: string) =>
    restCall(ts.url, "POST", `/iam/v2beta1/groups/${org.uid}`, { name }, org.owner.headers);
  const ready = async () => (await fetch(`${ts.url}/readyz`)).status;

  it("answers UNAVAILABLE (STORAGE_FULL), reports unready, keeps reads, and recovers", async () => {
    const kept = await create("before");
    expect(kept.status).toBe(200);
    expect(await ready()).toBe(200);
    // Every insert into groups fails as a full disk makes PostgreSQL fail (SQLSTATE 53100).
    await admin.query(`CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'
        USING ERRCODE = 'disk_full'; END $$`);
    await admin.query(
      "CREATE TRIGGER disk_full BEFORE INSERT ON groups FOR EACH ROW EXECUTE FUNCTION disk_full()",
    );
    const full = await create("refused");
    expect(full.status).toBe(503);
    expect(full.json.code).toBe(14);
    expect(full.json.details[0]).toMatchObject({ reason: "STORAGE_FULL" });
    expect(await ready()).toBe(503);
    const read = await restCall(
      ts.url,
      "GET",
      `/iam/v2beta1/groups/${kept.json.uid}`,
      undefined,
      org.owner.headers,
    );
    expect(read.status).toBe(200);

    await admin.query("DROP TRIGGER disk_full ON groups");
    expect((await create("after")).status).toBe(200);
    expect(await ready()).toBe(200);
  });
});

describe("PostgreSQL frozen", () => {
  let postgres: RestartablePostgres;
  let url: string;
  beforeAll(async () => {
    postgres = await startRestartablePostgres();
    url = await createDatabase(postgres.adminUrl, "gatehouse");
  }, 60_000);
  afterAll(async () => {
    postgres?.thaw();
    await postgres?.destroy();
  }, 20_000);

  /**
   * Freeze PostgreSQL (unless `during` does), run `during`, and thaw it once `during` has
   * resolved, or `stallMs` later if it has not by then: what `during` resolved with, and
   * whether it did while PostgreSQL was still frozen. (Thawed as soon as the answers are in:
   * waiting out the rest of the stall proved nothing more, and cost the file 20 of its 36 s.)
   */
  async function whileFrozen<T>(
    stallMs: number,
    during: () => Promise<T>,
    opts: { freezes?: boolean } = {},
  ): Promise<{ value: T; settledFrozen: boolean }> {
    if (!opts.freezes) postgres.freeze();
    let frozen = true;
    const timer = setTimeout(() => {
      frozen = false;
      postgres.thaw();
    }, stallMs);
    try {
      const value = await during();
      return { value, settledFrozen: frozen };
    } finally {
      clearTimeout(timer);
      postgres.thaw();
    }
  }

  it("bounds the wait for a connection, a statement and a commit by the call timeout", {
    timeout: 60_000,
  }, async () => {
    const store: PostgresStore = await createPostgresStore(url, {
      roles: storeRoles,
      timeoutMs: 500,
      maxConnections: 2,
      listen: false,
    });
    const group = () => ({
      uid: newRootUid(),
      parentUid: "",
      name: "g",
      description: "",
      now: Date.now(),
    });
    try {
      await store.createGroup(group());
      const outcome = (p: Promise<unknown>) =>
        p.then(
          () => "ok",
          (e: unknown) => (e instanceof StoreError ? e.kind : `not a StoreError: ${String(e)}`),
        );
      const { value, settledFrozen } = await whileFrozen(
        8_000,
        async () => {
          // A commit: the transaction's statements ran, then PostgreSQL froze.
          let frozen: () => void = () => undefined;
          const isFrozen = new Promise<void>((resolve) => {
            frozen = resolve;
          });
          const commit = outcome(
            store.atomically(async (tx) => {
              await tx.createGroup(group());
              postgres.freeze();
              frozen();
            }),
          );
          await isFrozen;
          // Statements on the frozen connections, then callers waiting for one of the two.
          const statements = [store.getGroup(newRootUid()), store.createGroup(group())].map(
            outcome,
          );
          const waiting = Array.from({ length: 4 }, () => outcome(store.ping()));
          return Promise.all([commit, ...statements, ...waiting]);
        },
        { freezes: true },
      );
      expect(value).toEqual(Array(7).fill("unavailable"));
      expect(settledFrozen, "answered only after PostgreSQL ran again").toBe(true);
      // The cut connections are replaced: the store works again.
      await store.createGroup(group());
    } finally {
      await store.close();
    }
  });

  it("answers calls UNAVAILABLE and /readyz 503 while frozen, and serves again after", {
    timeout: 60_000,
  }, async () => {
    const ts = await startTestServer({
      GATEHOUSE_DATABASE_URL: url,
      GATEHOUSE_DB_TIMEOUT_MS: "1500",
    });
    try {
      const org = await ts.makeOrg("frozen");
      const path = `/iam/v2beta1/groups/${org.uid}`;
      expect((await fetch(`${ts.url}/readyz`)).status).toBe(200);
      const { value, settledFrozen } = await whileFrozen(10_000, () =>
        Promise.all([
          restCall(ts.url, "GET", path, undefined, org.owner.headers),
          restCall(ts.url, "POST", path, { name: "during" }, org.owner.headers),
          ...Array.from({ length: 12 }, () =>
            restCall(ts.url, "GET", path, undefined, org.owner.headers),
          ),
          fetch(`${ts.url}/readyz`).then((r) => ({ status: r.status, json: undefined })),
        ]),
      );
      expect(settledFrozen, "answered only after PostgreSQL ran again").toBe(true);
      const ready = value.pop()!;
      expect(ready.status).toBe(503);
      for (const answer of value) {
        expect(answer.status).toBe(503);
        expect(answer.json.code).toBe(14);
      }
      // Thawed: calls succeed again without a restart.
      for (let i = 0; ; i++) {
        const again = await restCall(ts.url, "GET", path, undefined, org.owner.headers);
        if (again.status === 200) break;
        expect(i).toBeLessThan(200);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect((await fetch(`${ts.url}/readyz`)).status).toBe(200);
    } finally {
      await ts.close();
    }
  });

  it("answers /readyz 503 within its own bound, before a call times out", {
    timeout: 60_000,
  }, async () => {
    // The call timeout far above /readyz's one second (four times it): /readyz must not wait
    // for it. (8 s, as it was, made the call, and the test, wait 4 s more to show the same.)
    const ts = await startTestServer({
      GATEHOUSE_DATABASE_URL: url,
      GATEHOUSE_DB_TIMEOUT_MS: "4000",
    });
    try {
      const org = await ts.makeOrg("frozen-ready");
      const { value, settledFrozen } = await whileFrozen(12_000, async () => {
        const order: string[] = [];
        const call = restCall(
          ts.url,
          "GET",
          `/iam/v2beta1/groups/${org.uid}`,
          undefined,
          org.owner.headers,
        ).then((a) => {
          order.push("call");
          return a.status;
        });
        const ready = fetch(`${ts.url}/readyz`).then((r) => {
          order.push("readyz");
          return r.status;
        });
        return { statuses: await Promise.all([call, ready]), order };
      });
      expect(settledFrozen).toBe(true);
      expect(value.statuses).toEqual([503, 503]);
      expect(value.order).toEqual(["readyz", "call"]);
    } finally {
      await ts.close();
    }
  });
});
