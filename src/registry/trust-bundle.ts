import { randomBytes, webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";
import type { SigningKeyRecord } from "../store/store.js";

const ecdsa = { name: "ECDSA", namedCurve: "P-256" } as const;
const dayMs = 86_400_000;

/**
 * A PEM bundle of one self-signed certificate per signing key, for a registry's
 * `auth.token.rootcertbundle`. Distribution takes each certificate's public key as a trusted
 * token key (found by the token's libtrust `kid`); the certificates are only carriers, so
 * each is signed by its own key and valid for ten years. @peculiar/x509 builds them: Node has
 * no X.509 writer, and DER by hand is where mistakes hide.
 */
export async function trustBundle(
  records: readonly SigningKeyRecord[],
  now: number,
): Promise<string> {
  // The library's default provider is the global WebCrypto; say which one, once, for clarity.
  x509.cryptoProvider.set(webcrypto as never);
  const { subtle } = webcrypto;
  const pems: string[] = [];
  for (const r of records) {
    const privateJwk = JSON.parse(r.privateJwk) as webcrypto.JsonWebKey;
    const { kty, crv, x, y } = JSON.parse(r.publicJwk) as Record<string, string>;
    const keys = {
      privateKey: await subtle.importKey("jwk", privateJwk, ecdsa, false, ["sign"]),
      publicKey: await subtle.importKey(
        "jwk",
        { kty, crv, x, y } as webcrypto.JsonWebKey,
        ecdsa,
        true,
        ["verify"],
      ),
    };
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: randomBytes(16)
        .toString("hex")
        .replace(/^[89a-f]/, "1"),
      name: `CN=Gatehouse token signing key ${r.kid}`,
      notBefore: new Date(now - dayMs),
      notAfter: new Date(now + 3650 * dayMs),
      keys: keys as never,
      signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
      extensions: [new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true)],
    });
    pems.push(cert.toString("pem"));
  }
  return `${pems.join("\n")}\n`;
}
