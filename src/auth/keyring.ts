import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
} from "jose";
import { type AuditScope, changeScope } from "../events/audit-scope.js";
import { type SigningKeyRecord, type Store, StoreError } from "../store/store.js";

/** The public half of a signing key, as published in the JWKS document. */
export interface PublicJwk {
  kty: "EC";
  crv: "P-256";
  x: string;
  y: string;
  kid: string;
  alg: "ES256";
  use: "sig";
}

/** The key that signs new tokens. */
export interface SigningKey {
  kid: string;
  key: CryptoKey;
  /** Its public half (for the libtrust key ID registries look keys up by). */
  publicJwk: PublicJwk;
}

/**
 * The createTime of a pending next key: published and trusted (JWKS, the registry trust
 * bundle) but not signing until `rotate` promotes it. The latest time a Date can hold.
 */
export const pendingKeyTime = 8_640_000_000_000_000;

/**
 * KeyRing holds Gatehouse's ES256 signing keys. They live in the store, so every process on
 * one database signs and verifies with the same keys.
 */
export interface KeyRing {
  /** Load the keys, creating the first one if the store has none. Idempotent. */
  ensureKey(): Promise<void>;
  /**
   * Make a new key the signing key and prune keys that no unexpired token can still name.
   * The pending next key (prepareNext) is promoted if there is one, so that verifiers that
   * trusted it beforehand (registries) go on verifying; otherwise a new key is added. Returns
   * the kid that now signs. The rotation is in the audit trail, recorded with the key's write:
   * `dev.gatehouse.auth.signing_key.rotated.v1` about the kid, by `operator` (no identity).
   */
  rotate(operator?: string): Promise<string>;
  /**
   * Make sure a pending next key exists (published, not signing) and return its kid: the key
   * the next rotate promotes. A key made here is recorded as
   * `dev.gatehouse.auth.signing_key.created.v1`, by `operator`.
   */
  prepareNext(operator?: string): Promise<string>;
  /** The newest key, which signs new tokens. */
  signingKey(): Promise<SigningKey>;
  /** The JWKS document of every key that may still verify a token. */
  publicJwks(): Promise<{ keys: PublicJwk[] }>;
  /**
   * The public key for `kid`, or undefined. An unknown kid reloads the keys from the store
   * (at most once per `reloadIntervalMs`) so a rotation by another process is picked up.
   */
  verificationKey(kid: string): Promise<CryptoKey | undefined>;
}

/** What a key ring needs from the store. */
export type KeyStore = KeyWrites & {
  /** The store's view for a change (Store.recording): a rotation records its event. */
  recording(provenance: AuditScope): KeyWrites;
};

type KeyWrites = Pick<
  Store,
  "listSigningKeys" | "addSigningKey" | "pruneSigningKeys" | "setSigningKeyTime"
>;

/** Options of createKeyRing; times in milliseconds. */
export interface KeyRingOptions {
  store: KeyStore;
  now?: () => number;
  /** Lifetime of the tokens the keys sign; a superseded key is kept at least this long. */
  tokenLifetimeMs?: number;
  /** Extra time a superseded key is kept: clock skew and other processes' stale views. */
  pruneMarginMs?: number;
  /** How old the cached view may get before signing or publishing re-reads the store. */
  refreshIntervalMs?: number;
  /** Minimum time between reloads caused by an unknown kid. */
  reloadIntervalMs?: number;
}

interface Loaded {
  /** Every key, by createTime then kid: pending keys last. */
  sorted: SigningKeyRecord[];
  keys: Map<string, { jwk: PublicJwk; key: CryptoKey; createTime: number }>;
  loadedAt: number;
}

/** Create a key ring persisted in `store`. */
export function createKeyRing(opts: KeyRingOptions): KeyRing {
  const { store } = opts;
  const now = opts.now ?? Date.now;
  const lifetimeMs = opts.tokenLifetimeMs ?? 3_600_000;
  const marginMs = opts.pruneMarginMs ?? 15 * 60_000;
  const refreshMs = opts.refreshIntervalMs ?? 60_000;
  const reloadMs = opts.reloadIntervalMs ?? 5_000;

  let state: Loaded | undefined;
  let loading: Promise<Loaded> | undefined;
  let lastUnknownKidReload = Number.NEGATIVE_INFINITY;
  // Imported keys by kid, so a reload does not re-import keys it already has.
  const publicKeys = new Map<string, CryptoKey>();
  let signing: { kid: string; key: Promise<CryptoKey> } | undefined;

  async function load(): Promise<Loaded> {
    // The first key, made when none exists, is start-up, not a change anyone made: written
    // through the store itself, never a call's view, it records no event.
    return loadKeys();
  }

  async function loadKeys(): Promise<Loaded> {
    let records = await store.listSigningKeys();
    if (records.length === 0) {
      try {
        await store.addSigningKey(await generate(now()));
      } catch (err) {
        // Another process created its first key at the same moment: use what is there.
        if (!(err instanceof StoreError && err.kind === "already_exists")) throw err;
      }
      records = await store.listSigningKeys();
    }
    // Every process must pick the same newest key, so order by time, then kid.
    const sorted = [...records].sort((a, b) => a.createTime - b.createTime || cmp(a.kid, b.kid));
    if (sorted.length === 0) throw new Error("key ring: the store returned no signing keys");
    const keys: Loaded["keys"] = new Map();
    for (const r of sorted) {
      const jwk = publicJwkOf(r);
      let key = publicKeys.get(r.kid);
      if (!key) {
        key = (await importJWK(jwk, "ES256")) as CryptoKey;
        publicKeys.set(r.kid, key);
      }
      keys.set(r.kid, { jwk, key, createTime: r.createTime });
    }
    for (const kid of publicKeys.keys()) if (!keys.has(kid)) publicKeys.delete(kid);
    return { sorted, keys, loadedAt: now() };
  }

  function reload(): Promise<Loaded> {
    // One load at a time; concurrent callers share it.
    loading ??= load().then(
      (s) => {
        state = s;
        loading = undefined;
        return s;
      },
      (err) => {
        loading = undefined;
        throw err;
      },
    );
    return loading;
  }

  /** Reload with a read that starts after this call (not one already in flight). */
  async function freshReload(): Promise<Loaded> {
    await loading?.catch(() => {});
    return reload();
  }

  async function current(): Promise<Loaded> {
    if (state && now() - state.loadedAt < refreshMs) return state;
    return reload();
  }

  /** The newest key that has started signing (pending keys have not). */
  function newestSigning(s: Loaded): SigningKeyRecord {
    const t = now();
    for (let i = s.sorted.length - 1; i >= 0; i--) {
      const r = s.sorted[i]!;
      if (r.createTime <= t) return r;
    }
    throw new Error("key ring: every signing key is pending; run gatehouse keys rotate");
  }

  const pendingOf = (s: Loaded) => s.sorted.find((r) => r.createTime > now());

  return {
    async ensureKey() {
      await current();
    },
    async rotate(operator = "gatehouse keys rotate") {
      const pending = pendingOf(await freshReload());
      let kid: string;
      if (pending) {
        kid = pending.kid;
        await keyChange(store, rotatedType, kid, operator, (s) => s.setSigningKeyTime(kid, now()));
      } else {
        const record = await generate(now());
        kid = record.kid;
        await keyChange(store, rotatedType, kid, operator, (s) => s.addSigningKey(record));
      }
      const s = await freshReload();
      // A key may go once the key that replaced it has signed for longer than a token lives:
      // prune everything older than the newest key that was already signing before the cutoff.
      const cutoff = now() - lifetimeMs - marginMs;
      const settled = [...s.keys.values()]
        .map((k) => k.createTime)
        .filter((t) => t <= cutoff)
        .sort((a, b) => a - b)
        .at(-1);
      if (settled !== undefined) {
        await store.pruneSigningKeys(settled);
        await freshReload();
      }
      return kid;
    },
    async prepareNext(operator = "gatehouse registry trust-bundle") {
      const pending = pendingOf(await freshReload());
      if (pending) return pending.kid;
      const record = await generate(pendingKeyTime);
      await keyChange(store, createdType, record.kid, operator, (s) => s.addSigningKey(record));
      await freshReload();
      return record.kid;
    },
    async signingKey() {
      const s = await current();
      const newest = newestSigning(s);
      if (signing?.kid !== newest.kid) {
        const privateJwk = JSON.parse(newest.privateJwk) as JWK;
        const key = importJWK(privateJwk, "ES256", { extractable: false }) as Promise<CryptoKey>;
        signing = { kid: newest.kid, key };
        // A failed import must not stick: the next call tries again.
        key.catch(() => {
          if (signing?.key === key) signing = undefined;
        });
      }
      const { kid, key } = signing;
      const publicJwk = s.keys.get(kid)?.jwk ?? publicJwkOf(newest);
      return { kid, key: await key, publicJwk };
    },
    async publicJwks() {
      const s = await current();
      return { keys: [...s.keys.values()].map((k) => k.jwk) };
    },
    async verificationKey(kid) {
      const s = await current();
      const hit = s.keys.get(kid);
      if (hit) return hit.key;
      // Rate-limited so that a stream of made-up kids cannot hammer the database.
      if (now() - lastUnknownKidReload < reloadMs) return undefined;
      lastUnknownKidReload = now();
      return (await reload()).keys.get(kid)?.key;
    },
  };

  async function generate(createTime: number): Promise<SigningKeyRecord> {
    const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
    const pub = await exportJWK(publicKey);
    // RFC 7638 thumbprint: unique per key, and derivable by anyone who holds the public key.
    const kid = await calculateJwkThumbprint(pub);
    return {
      kid,
      privateJwk: JSON.stringify({ ...(await exportJWK(privateKey)), kid }),
      publicJwk: JSON.stringify({ ...pub, kid }),
      createTime,
    };
  }
}

/** Event types of the key ring's changes. */
const rotatedType = "dev.gatehouse.auth.signing_key.rotated.v1";
const createdType = "dev.gatehouse.auth.signing_key.created.v1";

/**
 * Make a key write through the store's view for its change: the store records the event,
 * about the kid (public: the JWKS names it) and by the operator, in the write's transaction.
 * The key itself is never in it.
 */
function keyChange(
  store: KeyStore,
  type: string,
  kid: string,
  operator: string,
  write: (s: KeyWrites) => Promise<void>,
) {
  const scope = changeScope({ type, source: operator, protocol: "cli", subjectUid: kid, operator });
  return write(store.recording(scope));
}

function publicJwkOf(r: SigningKeyRecord): PublicJwk {
  const jwk = JSON.parse(r.publicJwk) as JWK;
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || !jwk.x || !jwk.y) {
    throw new Error(`key ring: signing key ${r.kid} is not a P-256 public key`);
  }
  // Rebuilt field by field so that nothing but public parameters is ever published.
  return { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, kid: r.kid, alg: "ES256", use: "sig" };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
