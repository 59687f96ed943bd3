import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CliError } from "../cli-io.js";

/** The executable docker runs for `credHelpers: {host: "gatehouse"}`. */
export const helperExecutable = "docker-credential-gatehouse";

/** The first executable file named `name` in the directories of `path`, or undefined. */
export function findOnPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? "").split(delimiter)) {
    // An empty entry is the current directory, which docker and skopeo (Go's exec.LookPath)
    // refuse to run from: it does not count.
    if (dir === "" || dir === ".") continue;
    const file = join(dir, name);
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here, or not executable
    }
  }
  return undefined;
}

/** The checkout (or installed package) this code runs from: the folder of its package.json. */
export function packageRoot(from: string = fileURLToPath(import.meta.url)): string | undefined {
  for (let dir = dirname(from); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (!existsSync(file)) continue;
    try {
      if ((JSON.parse(readFileSync(file, "utf8")) as { name?: string }).name === "gatehouse") {
        return dir;
      }
    } catch {
      // not ours
    }
  }
  return undefined;
}

/**
 * Refuse, before docker's config is touched, when docker could not run the credential helper:
 * docker and skopeo find `docker-credential-gatehouse` on PATH only, and without it every pull
 * and push of the registry fails with a message about the helper that does not say why (skopeo:
 * "resolves to executable in current directory"). The error names the one command that fixes it.
 */
export function requireHelperOnPath(path: string | undefined): void {
  if (findOnPath(helperExecutable, path)) return;
  const root = packageRoot();
  const fix = root
    ? `run \`npm link\` in ${root} (once, after npm run build: it puts gatehouse and ` +
      `${helperExecutable} on PATH, in $(npm prefix -g)/bin), or link ` +
      `${join(root, "bin", `${helperExecutable}.js`)} into a directory on PATH as ${helperExecutable}`
    : `install the gatehouse package so that ${helperExecutable} is on PATH`;
  throw new CliError(
    `${helperExecutable} is not on PATH, so docker could not get credentials from it: ${fix}; ` +
      "then run this command again (docker's config is unchanged)",
    1,
  );
}
