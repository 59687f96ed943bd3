import { CliError, type CliIo } from "../cli-io.js";
import { type Discovery, TokenEndpointError, type TokenSet, tokenRequest } from "./oauth-client.js";

const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code";

/** What the device authorization endpoint answered, as far as the CLI uses it. */
interface DeviceAuthorization {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string;
  expiresIn: number;
  interval: number;
}

/**
 * Sign a person in with the device authorization grant (RFC 8628), for a machine without a
 * browser the person can reach (SSH, a container): print the verification URL and the user
 * code, and poll the token endpoint until the person approves or denies on any device, or the
 * code expires.
 */
export async function deviceLogin(opts: {
  discovery: Discovery;
  identityProvider?: string;
  io: CliIo;
}): Promise<TokenSet> {
  const { discovery, io } = opts;
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
  if (!discovery.deviceAuthorizationEndpoint) {
    throw new CliError(
      `${discovery.issuer} has no device authorization endpoint: it cannot sign in headless; ` +
        "use gatehouse auth login --no-browser",
      1,
    );
  }
  const started = await authorize(discovery.deviceAuthorizationEndpoint, opts.identityProvider);
  io.err(
    `To sign in, open this URL on any device:\n\n  ${started.verificationUri}\n\n` +
      `and enter the code\n\n  ${started.userCode}\n\n` +
      `(or open ${started.verificationUriComplete})\nWaiting for approval...\n`,
  );
  let intervalMs = Math.max(1, started.interval) * 1000;
  const deadline = Date.now() + started.expiresIn * 1000;
  for (;;) {
    await sleep(intervalMs);
    try {
      return await tokenRequest(discovery.tokenEndpoint, {
        grant_type: deviceGrant,
        device_code: started.deviceCode,
        client_id: "gatehouse-cli",
      });
    } catch (err) {
      if (!(err instanceof TokenEndpointError)) throw err;
      switch (err.error) {
        case "authorization_pending":
          break;
        case "slow_down":
          // RFC 8628 3.5: 5 seconds more for this and every later poll.
          intervalMs += 5000;
          break;
        case "access_denied":
          throw new CliError("sign-in denied on the verification page", 1);
        case "expired_token":
          throw new CliError(
            "the code expired before it was approved: run gatehouse auth login --headless again",
            1,
          );
        default:
          throw new CliError(`sign-in refused: ${err.description || err.error}`, 1);
      }
      if (Date.now() > deadline) {
        throw new CliError(
          "the code expired before it was approved: run gatehouse auth login --headless again",
          1,
        );
      }
    }
  }
}

async function authorize(endpoint: string, identityProvider: string | undefined) {
  let res: Response;
  try {
    res = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        client_id: "gatehouse-cli",
        ...(identityProvider ? { identity_provider: identityProvider } : {}),
      }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new CliError(`cannot reach ${new URL(endpoint).origin}: ${(err as Error).message}`, 1);
  }
  const body = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!res.ok || !body) {
    const why = body ? String(body.error_description ?? body.error ?? "") : "";
    throw new CliError(`the device sign-in was refused: ${why || `HTTP ${res.status}`}`, 1);
  }
  const text = (k: string) => (typeof body[k] === "string" ? (body[k] as string) : "");
  const started: DeviceAuthorization = {
    deviceCode: text("device_code"),
    userCode: text("user_code"),
    verificationUri: text("verification_uri"),
    verificationUriComplete: text("verification_uri_complete") || text("verification_uri"),
    expiresIn: Number(body.expires_in ?? 0),
    interval: Number(body.interval ?? 5),
  };
  if (
    started.deviceCode === "" ||
    started.userCode === "" ||
    !/^https?:\/\//.test(started.verificationUri) ||
    !(started.expiresIn > 0) ||
    !Number.isFinite(started.interval)
  ) {
    throw new CliError(`${endpoint} answered without a usable device code`, 1);
  }
  return started;
}
