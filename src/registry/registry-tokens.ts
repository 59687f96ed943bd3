import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";
import type { KeyRing } from "../auth/keyring.js";
import { libtrustKeyId } from "./libtrust.js";

/** One entry of a registry token's `access` claim. */
export interface RegistryAccess {
  type: string;
  name: string;
  actions: string[];
}

/**
 * How long a registry token lives: five minutes, as the issue (and Docker Hub) has it. A
 * client asks again for each push or pull session, so a removed role binding stops the next
 * one; distribution adds a minute of leeway of its own.
 */
export const registryTokenSeconds = 300;

/**
 * Create the signer of registry tokens (the Docker Registry v2 token format): ES256 by the
 * key ring's signing key, with the libtrust key ID as `kid` (how distribution finds the key
 * among its `rootcertbundle`), `iss` the auth URL, `aud` the registry's service name.
 */
export function createRegistryTokenSigner(opts: {
  keyRing: Pick<KeyRing, "signingKey">;
  issuer: string;
  now?: () => number;
}) {
  const now = opts.now ?? Date.now;
  // libtrust IDs by the key ring's kid: one SPKI export per key, not per token.
  const ids = new Map<string, string>();
  return {
    /** Sign a token for `sub` ("" for anonymous) granting `access` at `service`. */
    async sign(sub: string, service: string, access: readonly RegistryAccess[]) {
      const { kid, key, publicJwk } = await opts.keyRing.signingKey();
      let id = ids.get(kid);
      if (id === undefined) {
        id = libtrustKeyId(publicJwk);
        if (ids.size > 16) ids.clear();
        ids.set(kid, id);
      }
      const iat = Math.floor(now() / 1000);
      const token = await new SignJWT({ access })
        .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: id })
        .setIssuer(opts.issuer)
        .setSubject(sub)
        .setAudience(service)
        .setIssuedAt(iat)
        .setNotBefore(iat)
        .setExpirationTime(iat + registryTokenSeconds)
        .setJti(randomBytes(16).toString("base64url"))
        .sign(key);
      return { token, issuedAt: new Date(iat * 1000), expiresIn: registryTokenSeconds };
    },
  };
}

/** RegistryTokenSigner signs registry tokens. */
export type RegistryTokenSigner = ReturnType<typeof createRegistryTokenSigner>;
