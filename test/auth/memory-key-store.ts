import type { KeyStore } from "../../src/auth/keyring.js";
import { type SigningKeyRecord, StoreError } from "../../src/store/store.js";

/**
 * An in-memory KeyStore with the Store contract's semantics, for key ring tests. It keeps no
 * audit trail: a call's view is the store itself.
 */
export function memoryKeyStore(): KeyStore & { records: SigningKeyRecord[]; lists: number } {
  const self = {
    records: [] as SigningKeyRecord[],
    lists: 0,
    async listSigningKeys() {
      self.lists++;
      return [...self.records].sort((a, b) => a.createTime - b.createTime);
    },
    async addSigningKey(key: SigningKeyRecord) {
      if (self.records.some((r) => r.kid === key.kid)) {
        throw new StoreError("already_exists", `signing key ${key.kid}`);
      }
      self.records.push({ ...key });
    },
    async setSigningKeyTime(kid: string, createTime: number) {
      const r = self.records.find((x) => x.kid === kid);
      if (!r) throw new StoreError("not_found", `signing key ${kid}`);
      r.createTime = createTime;
    },
    async pruneSigningKeys(before: number) {
      const newest = [...self.records].sort((a, b) => a.createTime - b.createTime).at(-1);
      self.records = self.records.filter((r) => r === newest || r.createTime >= before);
    },
    recording: () => self,
  };
  return self;
}
