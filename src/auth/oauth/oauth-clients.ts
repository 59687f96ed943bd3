/** The command-line tool: a public client with a loopback redirect (RFC 8252). */
export const cliClientId = "gatehouse-cli";
/** The web console: a public client on the server's own origin. */
export const consoleClientId = "gatehouse-console";

/**
 * Gatehouse's own OAuth clients, all public (no secret: PKCE S256 binds a code to whoever
 * asked for it), and the redirect URIs each may use. Anything else is refused before any
 * redirect, so the authorization endpoint never redirects a browser to a stranger's site.
 */
export function createOAuthClients(opts: { baseUrl: string }) {
  const consoleRedirect = `${opts.baseUrl.replace(/\/$/, "")}/console/`;
  return {
    known(clientId: string): boolean {
      return clientId === cliClientId || clientId === consoleClientId;
    },
    /** Whether `redirectUri` is one the client may be sent back to. */
    redirectAllowed(clientId: string, redirectUri: string): boolean {
      if (clientId === consoleClientId) return redirectUri === consoleRedirect;
      if (clientId === cliClientId) return isLoopbackRedirect(redirectUri);
      return false;
    },
  };
}

/** OAuthClients knows Gatehouse's own clients and their redirect URIs. */
export type OAuthClients = ReturnType<typeof createOAuthClients>;

/**
 * A native app's loopback redirect: `http://127.0.0.1:<port>/<path>` or `http://[::1]:...`,
 * any port (the app picks a free one), no user info, no fragment. `localhost` is refused: it
 * may resolve to anything (RFC 8252 section 8.3).
 */
export function isLoopbackRedirect(uri: string): boolean {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return false;
  }
  return (
    u.protocol === "http:" &&
    (u.hostname === "127.0.0.1" || u.hostname === "[::1]") &&
    u.username === "" &&
    u.password === "" &&
    u.hash === "" &&
    !uri.includes("#")
  );
}
