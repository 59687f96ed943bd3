// Response bodies are walked freely by the REST suites; their shape is what they assert.
// biome-ignore lint/suspicious/noExplicitAny: JSON as the tests read it
export type Json = any;

/** What a REST call answered: the HTTP status, WWW-Authenticate and the JSON body. */
export interface RestReply {
  status: number;
  auth: string | null;
  json: Json;
}

/**
 * Call the REST API of `baseUrl` with plain fetch, sending `headers` (the bearer token) and
 * `body` as JSON when given.
 */
export async function restCall(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<RestReply> {
  const res = await fetch(baseUrl + path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    auth: res.headers.get("www-authenticate"),
    json: (await res.json()) as Json,
  };
}

/** The fields of the BadRequest detail of a REST error body, in order. */
export function badRequestFields(json: Json): string[] {
  const details = (json?.details ?? []) as Json[];
  const bad = details.find((d) => String(d["@type"]).endsWith("BadRequest"));
  return (bad?.fieldViolations ?? []).map((v: { field: string }) => v.field);
}
