import { newScimToken, scimBaseUrl } from "../../src/scim/scim-token.js";
import type { TestServer } from "../helpers/test-server.js";
import type { ScimStep } from "./scim-fixtures.js";

// biome-ignore lint/suspicious/noExplicitAny: SCIM JSON as the tests read it
export type Json = any;

/** What a SCIM request answered. */
export interface ScimReply {
  status: number;
  type: string | null;
  etag: string | null;
  location: string | null;
  json: Json;
}

/** A SCIM client of one organization: its base URL and token, as a directory holds them. */
export interface ScimClient {
  base: string;
  token: string;
  send(step: ScimStep, headers?: Record<string, string>): Promise<ScimReply>;
}

/** Send a SCIM request with fetch, as a directory does (application/scim+json). */
export async function scimFetch(
  base: string,
  token: string | undefined,
  step: ScimStep,
  headers: Record<string, string> = {},
): Promise<ScimReply> {
  const res = await fetch(base + step.path, {
    method: step.method,
    headers: {
      accept: "application/scim+json",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(step.body === undefined ? {} : { "content-type": "application/scim+json" }),
      ...headers,
    },
    ...(step.body === undefined ? {} : { body: JSON.stringify(step.body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    etag: res.headers.get("etag"),
    location: res.headers.get("location"),
    json: text === "" ? undefined : JSON.parse(text),
  };
}

/** Give `orgUid` a SCIM connection through the store, and a client of it. */
export async function connectScim(gh: TestServer, orgUid: string, creatorUid: string) {
  const { token, hash } = newScimToken();
  await gh.store.putScimConnection({ orgUid, tokenHash: hash, creatorUid, now: Date.now() });
  return scimClient(gh, orgUid, token);
}

/** A client of the organization's SCIM URL with `token`. */
export function scimClient(gh: TestServer, orgUid: string, token: string): ScimClient {
  const base = scimBaseUrl(gh.config.baseUrl, orgUid);
  return { base, token, send: (step, headers) => scimFetch(base, token, step, headers) };
}
