import { createHash } from "node:crypto";
import type { PersonLogin } from "../../store/iam-store.js";

/** What a verified ID token says about a person, as the sign-in paths read it. */
export interface PersonClaims {
  iss: string;
  sub: string;
  name?: unknown;
  email?: unknown;
  email_verified?: unknown;
}

/**
 * The root uid of a person: the SHA-1 of `issuer\nsubject` in hex (40 characters), so the
 * same person always gets the same identity and two issuers never share one.
 */
export function personUid(issuer: string, subject: string): string {
  return createHash("sha1").update(`${issuer}\n${subject}`).digest("hex");
}

/** The email of verified claims, or "": an unverified email is not kept. */
export function verifiedEmail(claims: PersonClaims): string {
  return claims.email_verified === true && typeof claims.email === "string" ? claims.email : "";
}

/** The person's root identity as the login says it is: uid, display name, verified email. */
export function personLogin(claims: PersonClaims, now: number): PersonLogin {
  const email = verifiedEmail(claims);
  return {
    uid: personUid(claims.iss, claims.sub),
    issuer: claims.iss,
    subject: claims.sub,
    name: displayName(claims.name, email, claims.sub),
    email,
    now,
  };
}

// Printable characters only, as an identity name must be; 256 at most (API.md "Limits").
const unprintable = /[\p{Cc}\p{Cs}]/gu;
const maxNameLength = 256;

function displayName(name: unknown, email: string, subject: string): string {
  const candidates = [typeof name === "string" ? name : "", email, subject];
  for (const c of candidates) {
    const clean = c.replace(unprintable, "").trim().slice(0, maxNameLength);
    if (clean !== "") return clean;
  }
  return "person";
}
