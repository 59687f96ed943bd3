import type { SigningKeyRecord } from "../store.js";

/** A signing_keys row as both backends store it (the JWKs as JSON text). */
export interface KeyRow {
  kid: string;
  private_jwk: string;
  public_jwk: string;
  create_time: number;
}

/** The record of a stored signing key. */
export function signingKeyRecordOf(row: KeyRow): SigningKeyRecord {
  return {
    kid: row.kid,
    privateJwk: row.private_jwk,
    publicJwk: row.public_jwk,
    createTime: row.create_time,
  };
}
