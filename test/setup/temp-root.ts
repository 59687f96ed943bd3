import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const prefix = "gatehouse-test-";

/** Whether a process `pid` still runs (a signal 0 reaches it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Remove the temporary roots under `base` that runs which ended without their teardown left
 * (an interrupted `npm test`): `gatehouse-test-<pid>` of a process that no longer runs.
 */
export function removeStaleRoots(base: string): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(base)) {
    const pid = Number(name.slice(prefix.length));
    if (!name.startsWith(prefix) || !Number.isInteger(pid) || pid <= 0 || alive(pid)) continue;
    rmSync(join(base, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

/**
 * Once per run: every temporary file and folder of the tests (os.tmpdir(), which reads TMPDIR)
 * goes under one root of this run, removed at its end; a run cut short leaves its root, which
 * the next run removes. Tiers share the root of their process.
 */
export default function setup(): () => void {
  if (process.env.GATEHOUSE_TEST_TMP_ROOT) return () => undefined;
  const base = tmpdir();
  removeStaleRoots(base);
  const root = join(base, `${prefix}${process.pid}`);
  // Others may pass through, not list: embedded PostgreSQL runs initdb as the `postgres` user
  // when the tests run as root, and it must open the password file it wrote here (0700 made
  // every PostgreSQL suite fail to start).
  mkdirSync(root, { recursive: true, mode: 0o711 });
  process.env.GATEHOUSE_TEST_TMP_ROOT = root;
  process.env.TMPDIR = root;
  return () => {
    process.env.TMPDIR = base;
    delete process.env.GATEHOUSE_TEST_TMP_ROOT;
    rmSync(root, { recursive: true, force: true });
  };
}
