import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { SecurityTokenService } from "../../gen/gatehouse/sts/v1/sts_pb.js";

/** An exchange's outcome, the same shape whichever protocol carried it. */
export type ExchangeResult =
  | { ok: true; token: string; expiry: Date }
  | { ok: false; code: number; message: string; status?: number; wwwAuthenticate?: string };

/** One way of calling the STS exchange. */
export type Exchange = (
  bearer: string | undefined,
  req: { aud: string; identity?: string },
) => Promise<ExchangeResult>;

/** Every way of calling the STS exchange of the server at `baseUrl`, by name. */
export function stsClients(baseUrl: string): Record<string, Exchange> {
  const auth = (bearer: string | undefined): Record<string, string> =>
    bearer === undefined ? {} : { authorization: `Bearer ${bearer}` };
  const rest =
    (build: (req: { aud: string; identity?: string }) => { url: string; init: RequestInit }) =>
    async (
      bearer: string | undefined,
      req: { aud: string; identity?: string },
    ): Promise<ExchangeResult> => {
      const { url, init } = build(req);
      const res = await fetch(`${baseUrl}${url}`, {
        ...init,
        headers: { ...auth(bearer), ...(init.headers as Record<string, string>) },
      });
      const json = (await res.json()) as Record<string, unknown>;
      if (res.ok) {
        return { ok: true, token: json.token as string, expiry: new Date(json.expiry as string) };
      }
      return {
        ok: false,
        code: json.code as number,
        message: json.message as string,
        status: res.status,
        wwwAuthenticate: res.headers.get("www-authenticate") ?? "",
      };
    };
  const params = (req: { aud: string; identity?: string }) =>
    new URLSearchParams({ aud: req.aud, ...(req.identity ? { identity: req.identity } : {}) });
  const rpc = (transport: Parameters<typeof createClient>[1]) => {
    const client = createClient(SecurityTokenService, transport);
    return async (bearer: string | undefined, req: { aud: string; identity?: string }) => {
      try {
        const res = await client.exchange(
          { aud: req.aud, identity: req.identity ?? "" },
          { headers: auth(bearer) },
        );
        return {
          ok: true,
          token: res.token,
          expiry: res.expiry ? timestampDate(res.expiry) : new Date(0),
        } as const;
      } catch (err) {
        const ce = ConnectError.from(err);
        return { ok: false, code: ce.code, message: ce.rawMessage } as const;
      }
    };
  };
  return {
    "REST GET": rest((req) => ({ url: `/sts/exchange?${params(req)}`, init: {} })),
    "REST POST JSON": rest((req) => ({
      url: "/sts/exchange",
      init: {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(req),
      },
    })),
    "REST POST form": rest((req) => ({
      url: "/sts/exchange",
      init: {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: params(req).toString(),
      },
    })),
    Connect: rpc(createConnectTransport({ baseUrl, httpVersion: "1.1" })),
    "gRPC-Web": rpc(createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })),
    gRPC: rpc(createGrpcTransport({ baseUrl })),
  };
}
