import { createHash, randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CliError, type CliIo } from "../cli-io.js";
import { type Discovery, TokenEndpointError, type TokenSet, tokenRequest } from "./oauth-client.js";

/** How long the CLI waits for the person to finish signing in. */
const loginTimeoutMs = 5 * 60_000;

/**
 * Sign a person in with the authorization code flow and PKCE (RFC 8252 for native apps): a
 * one-shot listener on 127.0.0.1 receives the redirect, the browser does the rest. The URL is
 * always printed, so that a person whose browser did not open can paste it into one on this
 * machine (the redirect comes back to 127.0.0.1).
 */
export async function browserLogin(opts: {
  /** The API's URL: the only origin whose sign-in page is handed to the OS opener. */
  api: string;
  discovery: Discovery;
  identityProvider?: string;
  browser: boolean;
  io: CliIo;
}): Promise<TokenSet> {
  const { discovery, io } = opts;
  const url = signInUrl(discovery.authorizationEndpoint, opts.api);
  const verifier = randomBytes(32).toString("base64url");
  const state = randomBytes(16).toString("base64url");
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  let launcher: { file: string; remove(): void } | undefined;
  // Ctrl-C or a kill while the person signs in ends the process without running `finally`:
  // the sign-in page (it holds the state) is removed first, then the process ends as the
  // signal would have ended it.
  const interrupted = (signal: NodeJS.Signals) => {
    launcher?.remove();
    process.removeListener("SIGINT", interrupted);
    process.removeListener("SIGTERM", interrupted);
    process.removeListener("SIGHUP", interrupted);
    process.kill(process.pid, signal);
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  process.once("SIGHUP", interrupted);
  try {
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: "gatehouse-cli",
      redirect_uri: redirectUri,
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
      state,
      ...(opts.identityProvider ? { identity_provider: opts.identityProvider } : {}),
    }).toString();
    const answer = waitForRedirect(server, state, discovery.issuer);
    io.err(`Open this URL in a browser to sign in:\n\n  ${url.href}\n\n`);
    if (opts.browser) {
      if (url.origin === new URL(opts.api).origin) {
        launcher = privateLauncher(url.href);
        // Loaded only to open one: with --no-browser its fifteen modules are not needed.
        const { default: open } = await import("open");
        await open(launcher.file).catch(() => {
          io.err("(could not open a browser; open the URL above yourself)\n");
        });
      } else {
        io.err(
          `(not opened: the sign-in page is not on ${new URL(opts.api).origin}; open it yourself if you trust it)\n`,
        );
      }
    }
    const code = await answer;
    try {
      return await tokenRequest(discovery.tokenEndpoint, {
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        redirect_uri: redirectUri,
        client_id: "gatehouse-cli",
      });
    } catch (err) {
      if (err instanceof TokenEndpointError) {
        throw new CliError(`sign-in refused: ${err.description || err.error}`, 1);
      }
      throw err;
    }
  } finally {
    process.removeListener("SIGINT", interrupted);
    process.removeListener("SIGTERM", interrupted);
    process.removeListener("SIGHUP", interrupted);
    launcher?.remove();
    server.closeAllConnections();
    server.close();
  }
}

/**
 * The sign-in page's URL from discovery, refused unless it is http or https: the OS opener
 * hands any other scheme (file:, a custom handler's) to whatever program claims it, and
 * discovery comes from the server the command was pointed at, which may be hostile.
 */
function signInUrl(endpoint: string, api: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new CliError(`${api} gave no usable sign-in URL (${JSON.stringify(endpoint)})`, 1);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CliError(
      `${api} gave a sign-in URL that is not http or https (${url.protocol}); not opened`,
      1,
    );
  }
  return url;
}

/**
 * A page that sends the browser on to `href`, in a directory of its own that only this user
 * can read (mode 0700, the file 0600). The opener is given the file's path, not the URL: a
 * command line is visible to every local user, and with the URL's state another one could
 * finish the sign-in in his browser and have this CLI signed in as himself (issue 23).
 */
function privateLauncher(href: string): { file: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-login-"));
  chmodSync(dir, 0o700);
  const file = join(dir, "sign-in.html");
  const attr = href.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  writeFileSync(
    file,
    `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">` +
      `<meta http-equiv="refresh" content="0;url=${attr}">` +
      `<title>Gatehouse sign-in</title><a href="${attr}">Continue to sign in</a>\n`,
    { mode: 0o600 },
  );
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The code of the first redirect to /callback whose state matches; refusals reject. An answer
 * that names another issuer (`iss`, RFC 9207) is refused: it is not from the server this
 * command asked, and its code must not be sent to that server's token endpoint.
 */
function waitForRedirect(
  server: ReturnType<typeof createServer>,
  state: string,
  issuer: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new CliError("sign-in timed out after 5 minutes", 1)),
      loginTimeoutMs,
    );
    server.on("request", (req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (url.pathname !== "/callback") {
        res.writeHead(404).end();
        return;
      }
      const page = (status: number, text: string) =>
        res
          .writeHead(status, {
            "content-type": "text/plain; charset=utf-8",
            "cache-control": "no-store",
          })
          .end(`${text}\n`);
      // Another tab or a stray request: not ours, and not a reason to give up.
      if (url.searchParams.get("state") !== state) {
        page(400, "This sign-in answer does not belong to the waiting gatehouse command.");
        return;
      }
      clearTimeout(timer);
      const iss = url.searchParams.get("iss");
      if (issuer !== "" && iss !== issuer) {
        const why = `the answer comes from ${iss === null ? "an unnamed issuer" : JSON.stringify(iss)}, not ${issuer}`;
        page(400, `Sign-in failed: ${why}. You can close this tab.`);
        reject(new CliError(`sign-in failed: ${why}`, 1));
        return;
      }
      const error = url.searchParams.get("error");
      const code = url.searchParams.get("code");
      if (error !== null || code === null) {
        const why = url.searchParams.get("error_description") ?? error ?? "no code";
        page(400, `Sign-in failed: ${why}. You can close this tab.`);
        reject(new CliError(`sign-in failed: ${why}`, 1));
        return;
      }
      page(200, "Signed in to Gatehouse. You can close this tab and return to the terminal.");
      resolve(code);
    });
  });
}
