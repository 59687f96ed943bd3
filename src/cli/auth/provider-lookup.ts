import { isUid } from "../../uid.js";
import { CliError, type CliIo } from "../cli-io.js";
import type { Discovery } from "./oauth-client.js";

/** One answer of the server's public provider lookup (`/oauth/identity-providers`). */
interface ProviderMatch {
  uid: string;
  name: string;
  organization: string;
  verified: boolean;
}

/**
 * The uid of the identity provider `text` names for `gatehouse auth login --identity-provider`:
 * a uid as it is; else, through the lookup the console's sign-in page uses, the one provider
 * named exactly `text`, or the one whose organization DNS-verified the email domain `text`
 * (`example.com`, or an address at it). An unverified domain claim is only listed, never
 * followed: anyone may claim a domain, and the person must choose such a provider by its name
 * or uid. No match or several: a usage error listing them.
 */
export async function identityProviderUid(
  discovery: Pick<Discovery, "authorizationEndpoint">,
  text: string,
  io: CliIo,
): Promise<string> {
  if (isUid(text)) return text;
  const byDomain = text.includes("@") || /^[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(text);
  const key = text.includes("@") ? "email" : byDomain ? "domain" : "name";
  const url = new URL(
    discovery.authorizationEndpoint.replace(/\/authorize$/, "/identity-providers"),
  );
  url.search = new URLSearchParams({ [key]: text }).toString();
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    throw new CliError(`cannot reach ${url.origin}: ${(err as Error).message}`, 1);
  }
  const body = (await res.json().catch(() => ({}))) as {
    identityProviders?: ProviderMatch[];
    error_description?: string;
  };
  if (!res.ok || !Array.isArray(body.identityProviders)) {
    throw new CliError(
      `--identity-provider: ${body.error_description ?? `the lookup answered HTTP ${res.status}`}`,
    );
  }
  const found = body.identityProviders;
  const usable = byDomain ? found.filter((p) => p.verified) : found;
  const shown = (p: ProviderMatch) =>
    `  ${p.uid}  ${p.name} (organization ${p.organization}${byDomain && !p.verified ? ", domain not verified" : ""})`;
  if (usable.length === 1) {
    const p = usable[0] as ProviderMatch;
    io.err(`Signing in through ${p.name} (organization ${p.organization}, ${p.uid})\n`);
    return p.uid;
  }
  const what = byDomain
    ? `declaring the email domain of ${JSON.stringify(text)}`
    : `named ${JSON.stringify(text)}`;
  if (found.length === 0) {
    throw new CliError(`--identity-provider: no identity provider ${what}; give its uid or name`);
  }
  throw new CliError(
    `--identity-provider: ${found.length} identity providers ${what}` +
      `${byDomain && usable.length === 0 ? ", none with a DNS-verified domain" : ""}; ` +
      `give one's uid:\n${found.map(shown).join("\n")}`,
  );
}
