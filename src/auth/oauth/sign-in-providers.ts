import type { FastifyPluginAsync } from "fastify";
import type { Store } from "../../store/store.js";
import { maxNameLength } from "../../validation/field-rules.js";
import { domainOfEmail, isEmailDomain, maxDomainLength } from "./email-domains.js";

/** Options of signInProviderRoutes. */
export interface SignInProviderOptions {
  store: Pick<Store, "listIdentityProviders" | "findIdentityProvidersByDomain">;
  /** The auth URL: the route lives beside its /oauth/authorize. */
  authUrl: string;
}

/** The most providers one lookup answers with. */
const maxMatches = 10;

/** The longest email address (RFC 5321's path limit). */
const maxEmailLength = 254;

/** The longest request target the lookup reads: a name, an email or a domain, encoded. */
const maxTargetLength = 2048;

const keys = ["name", "email", "domain"] as const;

/**
 * Serve `GET <auth path>/oauth/identity-providers?name=<exact name>` (or `?email=<address>`,
 * or `?domain=<domain>`): the uids of the organizations' identity providers with exactly this
 * name, or declaring the address's email domain, so that a person signs in through their
 * organization's provider by its name or their email rather than its uid (the console's
 * sign-in page). Public, like /oauth/authorize, which takes the uid: one exact key, at most ten
 * matches (by domain, the earliest declarations), and nothing but each provider's uid and
 * name, never its issuer, client, group or other domains. A domain is a claim, not verified
 * ownership: it only chooses a provider, and grants nothing.
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
      const page = await opts.store.listIdentityProviders({
        name: value.trim(),
        filters: {},
        order: { field: "uid", desc: false },
        skip: 0,
        limit: maxMatches,
      });
      return reply.send({
        identityProviders: page.items.map((p) => ({ uid: p.uid, name: p.name })),
      });
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
    const found = await opts.store.findIdentityProvidersByDomain(domain, maxMatches);
    return reply.send({ identityProviders: found.map((p) => ({ uid: p.uid, name: p.name })) });
  });
};
