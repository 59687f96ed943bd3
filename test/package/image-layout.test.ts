import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settings } from "../../src/config.js";
import { type DockerStage, parseDockerfile } from "../helpers/dockerfile.js";
import { freePort } from "../helpers/free-port.js";

// The container image, without a container engine (none on the development machines): its
// stages are rebuilt in a temporary directory from this checkout by following the
// Dockerfile's own COPY, RUN and WORKDIR lines (a directory per stage standing for its root),
// `npm run build` and `npm prune --omit=dev` included, and the server is started from the
// runtime stage's files alone, with its ENV, ENTRYPOINT and CMD, as `docker run` would. A
// file the server reads that the image leaves out (the /docs page's, once), or a runtime
// package among the devDependencies, stops it here as it would in the container.

const checkout = fileURLToPath(new URL("../../", import.meta.url));

let work: string;
let server: ChildProcess | undefined;
let exited: Promise<number | null>;
let base: string;
let runtimeEnv: Record<string, string>;
let runtimeDir: string;
let runtime: DockerStage;
let stages: DockerStage[];
let output = "";

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "gatehouse-image-"));
  stages = parseDockerfile(readFileSync(join(checkout, "Dockerfile"), "utf8"));
  const roots: string[] = [];
  let workdir = "/";
  for (const [i, stage] of stages.entries()) {
    const root = join(work, `stage-${i}`);
    mkdirSync(root);
    roots.push(root);
    workdir = "/";
    for (const step of stage.steps) {
      if (step.kind === "workdir") {
        workdir = posix.resolve(workdir, step.path);
        mkdirSync(join(root, workdir), { recursive: true });
      } else if (step.kind === "copy") {
        const { from, sources, dest } = step.copy;
        const fromRoot =
          from === undefined ? undefined : roots[stages.findIndex((s) => s.name === from)];
        if (from !== undefined && !fromRoot) throw new Error(`COPY --from=${from}: no such stage`);
        for (const source of sources) {
          const src = fromRoot ? join(fromRoot, posix.resolve("/", source)) : contextPath(source);
          const target = join(root, posix.resolve(workdir, dest));
          if (statSync(src).isDirectory()) {
            // A directory's contents go to the destination, as Docker copies them.
            cpSync(src, target, { recursive: true, filter: fromRoot ? undefined : notIgnored });
          } else {
            const file =
              dest.endsWith("/") || sources.length > 1 ? join(target, basename(src)) : target;
            mkdirSync(dirname(file), { recursive: true });
            cpSync(src, file);
          }
        }
      } else {
        for (const command of step.command.split("&&").map((c) => c.trim())) {
          await run(command, root, workdir);
        }
      }
    }
    if (i === stages.length - 1) runtimeDir = join(root, workdir);
  }
  runtime = stages.at(-1)!;
  const runtimeRoot = roots.at(-1)!;
  // The image's environment; its absolute paths (GATEHOUSE_DB=/data/...) in the stage's
  // directory. Listening only on 127.0.0.1 (tests talk to nothing else), on a free port.
  const port = await freePort();
  runtimeEnv = {
    PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
    ...Object.fromEntries(
      Object.entries(runtime.env).map(([k, v]) => [
        k,
        v.startsWith("/") ? join(runtimeRoot, v) : v,
      ]),
    ),
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
  };
  base = `http://127.0.0.1:${port}`;

  const [node, ...args] = [...runtime.entrypoint, ...runtime.cmd];
  expect(node).toBe("node");
  const child = spawn(process.execPath, args, {
    cwd: runtimeDir,
    env: runtimeEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  server = child;
  exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  // Ready once the server logs that it listens; an exit before that fails with its output.
  await new Promise<void>((resolve, reject) => {
    const onData = (text: string) => {
      output += text;
      if (output.includes("gatehouse listening")) resolve();
    };
    child.stdout.setEncoding("utf8").on("data", onData);
    child.stderr.setEncoding("utf8").on("data", onData);
    child.once("exit", (code, signal) => {
      reject(
        new Error(`the image's server exited (${code ?? signal}) before listening:\n${output}`),
      );
    });
  });
}, 300_000);

afterAll(async () => {
  if (server && server.exitCode === null && server.signalCode === null) {
    server.kill("SIGKILL");
    await exited;
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the container image, from the Dockerfile's runtime stage alone", () => {
  it("answers /readyz", async () => {
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(200);
  });

  it.each(["/docs/", "/console/"])("serves %s and every file its page loads", async (page) => {
    const res = await fetch(`${base}${page}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await res.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) {
      const file = await fetch(`${base}${asset}`);
      expect(file.status, asset).toBe(200);
      expect((await file.arrayBuffer()).byteLength, asset).toBeGreaterThan(0);
    }
  });

  it("passes its HEALTHCHECK", async () => {
    const [node, ...args] = runtime.healthcheck;
    expect(node).toBe("node");
    const check = spawnSync(process.execPath, args, {
      cwd: runtimeDir,
      env: runtimeEnv,
      encoding: "utf8",
    });
    expect(check.stderr).toBe("");
    expect(check.status).toBe(0);
  });

  it("sets only environment variables the server reads", () => {
    const known = new Set(settings.map((s) => s.env));
    const ours = Object.keys(runtime.env).filter((k) => k.startsWith("GATEHOUSE_"));
    expect(ours.length).toBeGreaterThan(0);
    // The server ignores a GATEHOUSE_ variable it does not know: a misspelt one would be lost.
    expect(ours.filter((k) => !known.has(k))).toEqual([]);
  });

  it("runs on the Node line the npm scripts run on, one package.json supports", () => {
    // This test runs the server on the Node running vitest; the image's own is its base's.
    const pkg = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8")) as {
      engines: { node: string };
      devDependencies: { node: string };
    };
    const ours = Number(pkg.devDependencies.node.split(".")[0]);
    const minimum = Number(/^>=\s*(\d+)/.exec(pkg.engines.node)?.[1]);
    for (const stage of stages) {
      const major = Number(/^node:(\d+)[-.]/.exec(stage.base)?.[1]);
      expect(major, stage.base).toBe(ours);
      expect(major, stage.base).toBeGreaterThanOrEqual(minimum);
    }
  });

  it("stops on SIGTERM with exit code 0", async () => {
    server!.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});

/** A path of the build context (this checkout); one .dockerignore leaves out fails here. */
function contextPath(source: string): string {
  const path = join(checkout, posix.normalize(source));
  if (!notIgnored(path)) throw new Error(`COPY ${source}: .dockerignore leaves it out`);
  return path;
}

const ignored = readFileSync(join(checkout, ".dockerignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l !== "" && !l.startsWith("#"))
  .map((pattern) => {
    if (pattern.startsWith("!")) throw new Error(".dockerignore: exceptions (!) are not read here");
    // Docker's patterns match from the context's root; * stays within one path segment.
    const re = pattern
      .replace(/^\/+/, "")
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*\*/g, "\0")
      .replace(/\*/g, "[^/]*")
      .replace(/\?/g, "[^/]")
      .replaceAll("\0", ".*");
    return new RegExp(`^${re}(/|$)`);
  });

/** Whether a path of the checkout is in the build context (not left out by .dockerignore). */
function notIgnored(path: string): boolean {
  const rel = relative(checkout, path).split("\\").join("/");
  return !ignored.some((re) => re.test(rel));
}

/**
 * One command of a RUN line, reproduced: npm ci (this checkout's node_modules, installed from
 * the same lockfile), npm run build (package.json's script, as npm runs it), npm prune
 * --omit=dev (only the packages npm counts as production ones, copied), mkdir -p and chmod.
 * Anything else is not known here: teach this function rather than skip it.
 */
async function run(command: string, root: string, workdir: string): Promise<void> {
  const cwd = join(root, workdir);
  const words = command.split(/\s+/);
  if (words[0] === "npm" && words[1] === "ci") {
    symlinkSync(join(checkout, "node_modules"), join(cwd, "node_modules"), "dir");
  } else if (command === "npm run build") {
    const pkg = JSON.parse(readFileSync(join(cwd, "package.json"), "utf8")) as {
      scripts: { build: string };
    };
    const build = spawnSync("sh", ["-c", pkg.scripts.build], {
      cwd,
      env: { ...process.env, PATH: `${join(cwd, "node_modules", ".bin")}:${process.env.PATH}` },
      encoding: "utf8",
    });
    if (build.status !== 0) {
      throw new Error(`npm run build failed (${build.status}):\n${build.stdout}${build.stderr}`);
    }
  } else if (command === "npm prune --omit=dev") {
    const ls = spawnSync("npm", ["ls", "--omit=dev", "--all", "--parseable"], {
      cwd: checkout,
      encoding: "utf8",
    });
    if (ls.status !== 0) throw new Error(`npm ls --omit=dev failed:\n${ls.stderr}`);
    const modules = join(checkout, "node_modules");
    rmSync(join(cwd, "node_modules"));
    mkdirSync(join(cwd, "node_modules"));
    for (const pkg of new Set(ls.stdout.split("\n").filter((p) => p.startsWith(`${modules}/`)))) {
      // Each package without its nested node_modules: those that stay are listed themselves.
      cpSync(pkg, join(cwd, relative(checkout, pkg)), {
        recursive: true,
        filter: (src) => src !== join(pkg, "node_modules"),
      });
    }
  } else if (words[0] === "mkdir" && words[1] === "-p") {
    for (const dir of words.slice(2)) {
      mkdirSync(join(root, posix.resolve(workdir, dir)), { recursive: true });
    }
  } else if (words[0] === "chmod" && words.length === 3 && /^[0-7]{3,4}$/.test(words[1]!)) {
    chmodSync(join(root, posix.resolve(workdir, words[2]!)), Number.parseInt(words[1]!, 8));
  } else if (words[0] === "chown") {
    // The test runs as its own user, who owns every file here already.
  } else {
    throw new Error(
      `RUN ${command}: test/package/image-layout.test.ts does not know how to reproduce it`,
    );
  }
}
