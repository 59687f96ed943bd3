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

/**
 * The root uid of a person who signs in through an organization's IdentityProvider: the
 * SHA-1 of `identity-provider:{uid}\n{issuer}\n{subject}`. Such people live in a namespace of
 * that provider's own: no provider, whatever its issuer or its ID tokens say, can yield the
 * identity of someone who signs in through the login provider, a trusted user issuer or
 * another provider (personUid's input starts with an http(s) issuer, never with this scheme).
 * The issuer is part of it: a provider re-pointed elsewhere reaches none of its former people.
 */
export function providerPersonUid(providerUid: string, issuer: string, subject: string): string {
  return createHash("sha1")
    .update(`identity-provider:${providerUid}\n${issuer}\n${subject}`)
    .digest("hex");
}

/** The email of verified claims, or "": an unverified email is not kept. */
export function verifiedEmail(claims: PersonClaims): string {
  return claims.email_verified === true && typeof claims.email === "string" ? claims.email : "";
}

/** Where a person signed in, when through an organization's IdentityProvider. */
export interface ProviderScope {
  /** The IdentityProvider's uid: the person's uid is scoped to it (providerPersonUid). */
  uid: string;
  /**
   * Whether its `email_verified` is believed: only when its issuer is the login provider's or
   * a trusted user issuer's. Anyone can run a provider that calls any address verified, and a
   * verified email redeems email-bound invites.
   */
  trustEmail: boolean;
}

/**
 * The person's root identity as the login says it is: uid, display name, verified email.
 * Through an organization's provider (`scope`), the uid is that provider's (providerPersonUid)
 * and the email is kept only if the provider's word on it is trusted.
 */
export function personLogin(claims: PersonClaims, now: number, scope?: ProviderScope): PersonLogin {
  const email = scope && !scope.trustEmail ? "" : verifiedEmail(claims);
  return {
    uid: scope
      ? providerPersonUid(scope.uid, claims.iss, claims.sub)
      : personUid(claims.iss, claims.sub),
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
