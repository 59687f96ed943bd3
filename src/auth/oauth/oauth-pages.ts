import { createHash } from "node:crypto";
import type { FastifyReply } from "fastify";

// The answers of the sign-in endpoints, shared by the authorization code flow
// (oauth-routes.ts) and the device flow (device-routes.ts): RFC 6749 error bodies for
// clients, small pages for people, and the parsing of their requests.

/** The stored form of a code or token: its SHA-256, never the secret itself. */
export function digest(secret: string): string {
  return createHash("sha256").update(secret).digest("base64url");
}

/** Query parameters as single strings; undefined if any is repeated (RFC 6749 3.1). */
export function single(query: Record<string, unknown>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    if (typeof v !== "string") return undefined;
    out[k] = v;
  }
  return out;
}

/** A posted form's parameters, each once; undefined if not a form or a parameter repeats. */
export function formOf(body: unknown): Record<string, string> | undefined {
  if (!(body instanceof URLSearchParams)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of body) {
    if (Object.hasOwn(out, k)) return undefined;
    out[k] = v;
  }
  return out;
}

/** An OAuth error answer (RFC 6749 5.2): `{error, error_description}`, 400 unless given. */
export function tokenError(reply: FastifyReply, error: string, description: string, status = 400) {
  if (status === 401) reply.header("www-authenticate", 'Basic realm="gatehouse"');
  return reply
    .code(status)
    .type("application/json")
    .send({ error, error_description: description });
}

const htmlEscapes: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** `text` safe inside HTML text and quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => htmlEscapes[c] ?? c);
}

/**
 * A page for a person: `body` is HTML the caller escaped. No script runs on it and it is never
 * framed (clickjacking a confirmation). Its forms post only to this origin, and with
 * `formLeaves` may be answered with a redirect to another (an identity provider's sign-in),
 * which CSP's form-action would otherwise block.
 */
export function page(
  reply: FastifyReply,
  status: number,
  title: string,
  body: string,
  formLeaves = false,
) {
  return reply
    .code(status)
    .header(
      "content-security-policy",
      `default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'${formLeaves ? "" : "; form-action 'self'"}`,
    )
    .header("x-frame-options", "DENY")
    .header("cache-control", "no-store")
    .type("text/html; charset=utf-8")
    .send(
      `<!doctype html><html lang="en"><meta charset="utf-8">` +
        `<meta name="viewport" content="width=device-width, initial-scale=1">` +
        `<title>${escapeHtml(title)}</title>` +
        `<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}` +
        `input,button{font-size:1.1rem;padding:.4rem .8rem}code{font-size:1.3rem}</style>` +
        `<main><h1>${escapeHtml(title)}</h1>${body}</main></html>\n`,
    );
}

/** A page for a person whose browser cannot be sent back to the client. */
export function errorPage(reply: FastifyReply, status: number, message: string) {
  return reply
    .code(status)
    .header("content-security-policy", "default-src 'none'")
    .header("cache-control", "no-store")
    .type("text/html; charset=utf-8")
    .send(
      `<!doctype html><html lang="en"><meta charset="utf-8"><title>Sign-in failed</title>` +
        `<h1>Sign-in failed</h1><p>${escapeHtml(message)}</p></html>\n`,
    );
}
