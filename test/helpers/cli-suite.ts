import { beforeAll } from "vitest";
import { late } from "./late.js";
import { runCli } from "./run-cli.js";
import {
  type TestOrg,
  type TestServer,
  type TestServerOptions,
  useTestServer,
  type WhenStarting,
} from "./test-server.js";

/** What useCliSuite gives a file or a describe block: the command line against a real server. */
export interface CliSuite {
  /** The server (useTestServer). */
  gh: TestServer;
  /** An organization on it, owned by a new person. */
  org: TestOrg;
  /**
   * The environment of `gatehouse` as the owner: GATEHOUSE_API (the server) and
   * GATEHOUSE_TOKEN (the owner's), filled in by the beforeAll (the object stays the same).
   */
  env: Record<string, string>;
  /**
   * `gatehouse <argv> --output json` (runCli), as the owner or as whoever holds `token`: what it
   * printed, parsed. A non-zero exit throws with its code and stderr.
   */
  // biome-ignore lint/suspicious/noExplicitAny: JSON as the tests read it
  json(argv: string[], token?: string): Promise<any>;
}

/**
 * The command line's test setup for a file or a describe block: a server (useTestServer, with
 * `env` and `opts` as it takes them), the organization `orgName` on it, and the environment
 * that points `gatehouse` at it as the owner. A beforeAll of the block added after this call
 * sees all of it made.
 */
export function useCliSuite(
  orgName: string,
  env: WhenStarting<Record<string, string>> = {},
  opts: WhenStarting<TestServerOptions> = {},
): CliSuite {
  const gh = useTestServer(env, opts);
  let org: TestOrg | undefined;
  const ownerEnv: Record<string, string> = {};
  beforeAll(async () => {
    org = await gh.makeOrg(orgName);
    Object.assign(ownerEnv, { GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: org.owner.token });
  });
  return {
    gh,
    org: late(() => org, "useCliSuite(): the organization exists from the block's beforeAll"),
    env: ownerEnv,
    async json(argv, token) {
      const as = token === undefined ? ownerEnv : { ...ownerEnv, GATEHOUSE_TOKEN: token };
      const r = await runCli([...argv, "--output", "json"], as);
      if (r.code !== 0) throw new Error(`gatehouse ${argv.join(" ")}: ${r.code} ${r.stderr}`);
      return JSON.parse(r.stdout);
    },
  };
}
