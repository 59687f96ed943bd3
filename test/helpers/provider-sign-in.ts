import { afterAll, beforeAll } from "vitest";
import { providerPersonUid } from "../../src/auth/login/person.js";
import { cliAuthorizeUrl, cliRedirect, newPkce } from "./cli-sign-in.js";
import { late } from "./late.js";
import { type RestReply, restCall } from "./rest-client.js";
import {
  type CookieJar,
  type IdpPerson,
  signInAtIdp,
  startTestIdp,
  type TestIdp,
} from "./test-idp.js";
import {
  type Backend,
  freePort,
  startTestServer,
  type TestCaller,
  type TestOrg,
  type TestServer,
} from "./test-server.js";

/** What useProviderSignIn starts. */
export interface ProviderSignInOptions {
  backend: Backend;
  /** The test provider's people (account id: their subject). */
  people: Record<string, IdpPerson>;
  /**
   * Settings besides the two that let a loopback provider in; a function gets the provider's
   * issuer (to trust it, say).
   */
  env?: Record<string, string> | ((issuer: string) => Record<string, string>);
  /** The server's clock. */
  now?: () => number;
  /** The organization's name. */
  orgName?: string;
}

/** How one sign-in through an organization's provider goes (ProviderSignIn.signIn). */
export interface SignInOptions {
  /** The ID token's `groups` claim (the provider's own claims otherwise). */
  groups?: string[];
  /** The PKCE challenge the client sends (a fresh one otherwise). */
  challenge?: string;
  /** The browser's cookies (a fresh browser otherwise). */
  jar?: CookieJar;
}

/** A Gatehouse, a real OpenID provider and an organization, for sign-ins through its provider. */
export interface ProviderSignIn {
  gh: TestServer;
  idp: TestIdp;
  /** The organization, owned by a person with a token. */
  org: TestOrg;
  /** A REST call as `as` (the organization's owner by default). */
  api(method: string, path: string, body?: unknown, as?: TestCaller): Promise<RestReply>;
  /**
   * Create an IdentityProvider at `groupUid` for the test provider (`fields` add to the body:
   * name, defaultRole, groupMappings, oidc's groupsClaim), as `as`; once made, its callback is
   * the one registered at the test provider. The reply.
   */
  createProvider(
    groupUid: string,
    fields?: Record<string, unknown>,
    as?: TestCaller,
  ): Promise<RestReply>;
  /**
   * A person's browser through the whole flow: the CLI's authorize URL naming provider `uid`,
   * the provider's login as `account`, back through the callback. The redirect to the CLI's
   * callback, unvisited (a `code`, or an `error`).
   */
  signIn(uid: string, account: string, opts?: SignInOptions): Promise<URL>;
  /** The uid of `account` signed in through provider `uid`. */
  personOf(uid: string, account: string): string;
}

/**
 * A test provider, a Gatehouse on a port known beforehand (the provider's redirect URI) and an
 * organization, started in a beforeAll of the block this is called in and closed in its
 * afterAll. What it returns stands for them from then on (used before, it throws).
 */
export function useProviderSignIn(opts: ProviderSignInOptions): ProviderSignIn {
  let current: ProviderSignIn | undefined;
  let gh: TestServer | undefined;
  let idp: TestIdp | undefined;
  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({
      redirectUri: `http://127.0.0.1:${port}/oauth/callback`,
      people: opts.people,
    });
    const env = typeof opts.env === "function" ? opts.env(idp.issuer) : (opts.env ?? {});
    gh = await startTestServer(
      {
        GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS: "true",
        GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES: "true",
        ...env,
      },
      { port, backend: opts.backend, ...(opts.now ? { now: opts.now } : {}) },
    );
    current = bind(gh, idp, await gh.makeOrg(opts.orgName ?? "acme"));
  });
  afterAll(async () => {
    current = undefined;
    await gh?.close();
    await idp?.close();
  });
  return late(
    () => current,
    "useProviderSignIn(): the server and provider run from the block's beforeAll to its afterAll",
  );
}

function bind(gh: TestServer, idp: TestIdp, org: TestOrg): ProviderSignIn {
  const api: ProviderSignIn["api"] = (method, path, body, as = org.owner) =>
    restCall(gh.url, method, path, body, as.headers);
  return {
    gh,
    idp,
    org,
    api,
    async createProvider(groupUid, fields = {}, as = org.owner) {
      const { oidc, ...rest } = fields as { oidc?: Record<string, unknown> };
      const made = await api(
        "POST",
        `/iam/v2beta1/identityProviders/${groupUid}`,
        {
          name: `SSO ${Math.random()}`,
          ...rest,
          oidc: {
            issuer: idp.issuer,
            clientId: idp.clientId,
            clientSecret: idp.clientSecret,
            ...oidc,
          },
        },
        as,
      );
      // Each provider has its own redirect URI, registered at the test provider.
      if (made.status === 200)
        idp.setRedirectUris([`${gh.url}/oauth/idp-callback/${made.json.uid}`]);
      return made;
    },
    async signIn(uid, account, { groups, challenge, jar } = {}) {
      if (groups) idp.tamperIdToken((c) => ({ ...c, groups }));
      try {
        const url = cliAuthorizeUrl(gh.url, challenge ?? newPkce().challenge, {
          identity_provider: uid,
        });
        return await signInAtIdp(url, account, cliRedirect, jar);
      } finally {
        if (groups) idp.tamperIdToken(undefined);
      }
    },
    personOf: (uid, account) => providerPersonUid(uid, idp.issuer, account),
  };
}
