import type { FastifyPluginAsync } from "fastify";
import { maxNameLength } from "../../services/validate.js";
import type { Store } from "../../store/store.js";

/** Options of signInProviderRoutes. */
export interface SignInProviderOptions {
  store: Pick<Store, "listIdentityProviders">;
  /** The auth URL: the route lives beside its /oauth/authorize. */
  authUrl: string;
}

/** The most providers one name answers with. */
const maxMatches = 10;

/**
 * Serve `GET <auth path>/oauth/identity-providers?name=<exact name>`: the uids of the
 * organizations' identity providers with exactly this name, so that a person signs in through
 * their organization's provider by its name (the console's sign-in page) rather than its uid.
 * Public, like /oauth/authorize, which takes the uid: an exact name only (no listing, no
 * prefix), and nothing but each provider's uid and name, never its issuer, client or group.
 */
export const signInProviderRoutes: FastifyPluginAsync<SignInProviderOptions> = async (
  app,
  opts,
) => {
  const path = new URL(opts.authUrl).pathname.replace(/\/$/, "");
  app.get(`${path}/oauth/identity-providers`, async (req, reply) => {
    const name = (req.query as Record<string, unknown>).name;
    reply.header("cache-control", "no-store");
    if (typeof name !== "string" || name.trim() === "" || name.length > maxNameLength) {
      return reply.code(400).send({
        error: "invalid_request",
        error_description: `name is required, once, at most ${maxNameLength} characters`,
      });
    }
    const page = await opts.store.listIdentityProviders({
      name: name.trim(),
      filters: {},
      order: { field: "uid", desc: false },
      skip: 0,
      limit: maxMatches,
    });
    return reply.send({
      identityProviders: page.items.map((p) => ({ uid: p.uid, name: p.name })),
    });
  });
};
