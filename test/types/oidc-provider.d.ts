// The few parts of oidc-provider (which ships no types) that test/helpers/test-idp.ts uses.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  export default class Provider {
    constructor(
      issuer: string,
      configuration: Record<string, unknown> & {
        findAccount?: (ctx: unknown, id: string) => Promise<Account | undefined>;
        extraTokenClaims?: (ctx: unknown, token: unknown) => Promise<Record<string, unknown>>;
      },
    );
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
}
