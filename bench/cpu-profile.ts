/**
 * A V8 .cpuprofile as `node --cpu-prof` writes it, and how the profile tools (profile-summary.ts,
 * profile-compare.ts) name its frames.
 */
import { readFileSync } from "node:fs";

/** One node of the profile's call tree: a frame and its callees' node ids. */
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** A profile: its call tree, and the node of each sample with the microseconds before it. */
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The profile in the file `file`. */
export function readProfile(file: string): Profile {
  return JSON.parse(readFileSync(file, "utf8")) as Profile;
}

/** The package (node_modules/<pkg>) or our own file (dist/...) a frame's `url` belongs to. */
export function where(url: string): string {
  if (!url) return "(native)";
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith("node:")) return url;
  const ours = /\/(dist\/[^?]+)$/.exec(url);
  return ours ? ours[1]! : url;
}

/** A frame as the tools list it: its function (or "(anonymous)"), where, and its line. */
export const frameLabel = (n: ProfileNode): string =>
  `${n.callFrame.functionName || "(anonymous)"} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
