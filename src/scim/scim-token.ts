import { createHash, randomBytes } from "node:crypto";

/** What every SCIM token starts with: a secret scanner can tell one from other tokens. */
export const scimTokenPrefix = "gatehouse_scim_";

/** The hash a SCIM token is stored and found by (SHA-256, hex): the token itself is never kept. */
export function hashScimToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** A new SCIM bearer token (256 random bits) and its hash. */
export function newScimToken(): { token: string; hash: string } {
  const token = `${scimTokenPrefix}${randomBytes(32).toString("base64url")}`;
  return { token, hash: hashScimToken(token) };
}

/** The SCIM base URL of an organization under the server's base URL. */
export function scimBaseUrl(baseUrl: string, orgUid: string): string {
  return `${baseUrl.replace(/\/$/, "")}/scim/v2/${orgUid}`;
}
