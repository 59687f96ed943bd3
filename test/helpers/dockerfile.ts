// A reader of the Dockerfile's instructions, enough for test/package/image-layout.test.ts to
// rebuild the image's file layout without a container engine: stages, WORKDIR, COPY, ENV,
// RUN and the exec forms of ENTRYPOINT, CMD and HEALTHCHECK.

/** One COPY: its sources, its destination, and the stage it copies from (none: the context). */
export interface DockerCopy {
  from: string | undefined;
  sources: string[];
  dest: string;
}

/** One build stage, its instructions in order. */
export interface DockerStage {
  /** The `AS` name, if any. */
  name: string | undefined;
  base: string;
  steps: DockerStep[];
  env: Record<string, string>;
  entrypoint: string[];
  cmd: string[];
  healthcheck: string[];
}

/** The instructions that change a stage's files, in order. */
export type DockerStep =
  | { kind: "workdir"; path: string }
  | { kind: "copy"; copy: DockerCopy }
  | { kind: "run"; command: string };

/** Split a Dockerfile into its stages; throws on an instruction it does not know. */
export function parseDockerfile(text: string): DockerStage[] {
  const stages: DockerStage[] = [];
  // Continuation lines joined, comments and blank lines dropped.
  const lines = text
    .split("\n")
    .filter((l) => !/^\s*#/.test(l))
    .join("\n")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  for (const line of lines) {
    const [, keyword = "", rest = ""] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const op = keyword.toUpperCase();
    if (op === "FROM") {
      const [base = "", as, name] = rest.split(/\s+/);
      stages.push({
        name: as?.toUpperCase() === "AS" ? name : undefined,
        base,
        steps: [],
        env: {},
        entrypoint: [],
        cmd: [],
        healthcheck: [],
      });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile: ${op} before FROM`);
    switch (op) {
      case "WORKDIR":
        stage.steps.push({ kind: "workdir", path: rest });
        break;
      case "COPY": {
        const words = rest.split(/\s+/);
        let from: string | undefined;
        while (words[0]?.startsWith("--")) {
          const flag = words.shift()!;
          if (flag.startsWith("--from=")) from = flag.slice("--from=".length);
          else throw new Error(`Dockerfile: COPY ${flag} is not understood here`);
        }
        const dest = words.pop();
        if (!dest || words.length === 0) throw new Error(`Dockerfile: COPY ${rest}`);
        stage.steps.push({ kind: "copy", copy: { from, sources: words, dest } });
        break;
      }
      case "RUN":
        stage.steps.push({ kind: "run", command: rest });
        break;
      case "ENV":
        for (const m of rest.matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
          stage.env[m[1]!] = m[2]!.replace(/^"(.*)"$/, "$1");
        }
        break;
      case "ENTRYPOINT":
        stage.entrypoint = execForm(op, rest);
        break;
      case "CMD":
        stage.cmd = execForm(op, rest);
        break;
      case "HEALTHCHECK": {
        // Options first (--interval=15s ...), then CMD and its exec form.
        const m = /(?:^|\s)CMD\s+(\[.*\])$/.exec(rest);
        if (!m) throw new Error(`Dockerfile: HEALTHCHECK without an exec-form CMD: ${rest}`);
        stage.healthcheck = execForm(op, m[1]!);
        break;
      }
      case "USER":
      case "VOLUME":
      case "EXPOSE":
      case "LABEL":
        break; // no file of the layout
      default:
        throw new Error(`Dockerfile: ${op} is not understood by test/helpers/dockerfile.ts`);
    }
  }
  return stages;
}

/** An instruction's exec form (a JSON array of strings); the shell form is refused. */
function execForm(op: string, text: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`Dockerfile: ${op} must use the exec form (a JSON array): ${text}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((s) => typeof s === "string")) {
    throw new Error(`Dockerfile: ${op} must be a JSON array of strings: ${text}`);
  }
  return parsed;
}
