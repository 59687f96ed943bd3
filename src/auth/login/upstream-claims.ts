/** The ID token's claims that Gatehouse uses, after openid-client validated it. */
export interface LoginClaims {
  iss: string;
  sub: string;
  name?: unknown;
  email?: unknown;
  email_verified?: unknown;
}

/** The longest subject kept: OpenID Connect Core 2 caps `sub` at 255 ASCII characters. */
const maxSubjectLength = 255;
/** The longest email kept (RFC 5321's path limit). */
const maxEmailLength = 254;
// Control characters (NUL among them: PostgreSQL refuses it in text) and lone surrogates.
const unusable = /[\p{Cc}\p{Cs}]/u;

/**
 * What is wrong with a provider's claims, or undefined: a subject or email that no column can
 * hold or no person could read (control characters, NUL included; too long). Checked before
 * anything is stored, so a hostile provider gets a refused sign-in, not a database error.
 */
export function checkUpstreamClaims(claims: Record<string, unknown>): string | undefined {
  const { sub, email } = claims;
  if (typeof sub !== "string" || sub === "") return "the ID token has no subject";
  if (sub.length > maxSubjectLength || unusable.test(sub)) {
    return "the subject is too long or has control characters";
  }
  if (email !== undefined && email !== null) {
    if (typeof email !== "string" || email.length > maxEmailLength || unusable.test(email)) {
      return "the email is not a string, too long, or has control characters";
    }
  }
  if (typeof claims.name === "string" && claims.name.length > 4096) return "the name is too long";
  return undefined;
}
