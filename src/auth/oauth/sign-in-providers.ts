import type { FastifyPluginAsync } from "fastify";
import type { Store } from "../../store/store.js";
import { maxNameLength } from "../../validation/field-rules.js";
import { domainOfEmail, isEmailDomain, maxDomainLength } from "./email-domains.js";

/** Options of signInProviderRoutes. */
export interface SignInProviderOptions {
  store: Pick<Store, "findIdentityProvidersByName" | "findIdentityProvidersByDomain">;
  /** The auth URL: the route lives beside its /oauth/authorize. */
  authUrl: string;
}

/** The most providers one lookup answers with. */
const maxMatches = 10;

/** The most providers of one organization a lookup answers with: none can fill the list. */
export const maxMatchesPerOrganization = 3;

/** The longest email address (RFC 5321's path limit). */
const maxEmailLength = 254;

/** The longest request target the lookup reads: a name, an email or a domain, encoded. */
const maxTargetLength = 2048;

const keys = ["name", "email", "domain"] as const;

/**
 * Serve `GET <auth path>/oauth/identity-providers?name=<exact name>` (or `?email=<address>`,
 * or `?domain=<domain>`): the organizations' identity providers with exactly this name, or
 * declaring the address's email domain, so that a person signs in through their
 * organization's provider by its name or their email rather than its uid (the console's
 * sign-in page). Public, like /oauth/authorize, which takes the uid: one exact key, and for
 * each match its uid, name, the name of the organization that declares it and whether DNS
 * verified that organization's claim of the domain; never its issuer, client, group or other
 * domains. Matches come verified first, then by when the name or domain was claimed (oldest
 * first), at most three of one organization and ten in all, so that neither later claims nor
 * one organization's many push an earlier claim out. An unverified claim only offers a
 * provider for the person to choose (the console never starts a sign-in on it alone), and
 * grants nothing.
 */
export const signInProviderRoutes: FastifyPluginAsync<SignInProviderOptions> = async (
  app,
  opts,
) => {
  const path = new URL(opts.authUrl).pathname.replace(/\/$/, "");
  app.get(`${path}/oauth/identity-providers`, async (req, reply) => {
    reply.header("cache-control", "no-store");
    const refuse = (description: string) =>
      reply.code(400).send({ error: "invalid_request", error_description: description });
    const usage = `exactly one of name (at most ${maxNameLength} characters), email or domain is required, once`;
    if (req.url.length > maxTargetLength)
      return refuse(`the query is longer than ${maxTargetLength} characters`);
    const query = req.query as Record<string, unknown>;
    const given = Object.keys(query);
    if (given.length !== 1 || !keys.includes(given[0] as (typeof keys)[number])) {
      return refuse(usage);
    }
    const key = given[0] as (typeof keys)[number];
    const value = query[key];
    if (typeof value !== "string" || value.trim() === "") return refuse(usage);

    if (key === "name") {
      if (value.length > maxNameLength) return refuse(usage);
      const found = await opts.store.findIdentityProvidersByName(
        value.trim(),
        maxMatches,
        maxMatchesPerOrganization,
      );
      return reply.send({ identityProviders: found });
    }
    const domain =
      key === "email"
        ? value.length <= maxEmailLength
          ? domainOfEmail(value.trim())
          : undefined
        : value.length <= maxDomainLength
          ? value.trim().toLowerCase()
          : undefined;
    if (domain === undefined || !isEmailDomain(domain)) {
      return refuse(
        key === "email"
          ? `email must be an address such as person@example.com, at most ${maxEmailLength} characters`
          : "domain must be a DNS name such as example.com",
      );
    }
    const found = await opts.store.findIdentityProvidersByDomain(
      domain,
      maxMatches,
      maxMatchesPerOrganization,
    );
    return reply.send({ identityProviders: found });
  });
};
