import { randomBytes } from "node:crypto";

/**
 * UIDPs: a root segment of 40 lowercase hex characters, then `/` and 16 lowercase hex
 * characters per level. A resource that lives in a group has the group's uid as prefix.
 */
const uidPattern = /^[0-9a-f]{40}(\/[0-9a-f]{16})*$/;

/** Create the uid of a new root group (an organization). */
export function newRootUid(): string {
  return randomBytes(20).toString("hex");
}

/** Create the uid of a new resource directly under `parent`. */
export function newChildUid(parent: string): string {
  return `${parent}/${randomBytes(8).toString("hex")}`;
}

/** The longest uid the API accepts. */
export const maxUidLength = 1024;

/**
 * How deep groups nest below their organization. The longest uid is a tag's, two levels
 * below its group (group, repo, tag): at this depth it has 40 + 17 * 52 = 924 characters,
 * so every resource of the deepest group stays within maxUidLength and addressable.
 */
export const maxGroupDepth = 50;

/** Whether `s` is a well-formed uid. */
export function isUid(s: string): boolean {
  return s.length <= maxUidLength && uidPattern.test(s);
}

/** How many levels `uid` lies below its root: 0 for an organization. */
export function depthOf(uid: string): number {
  let n = 0;
  for (let i = uid.indexOf("/"); i >= 0; i = uid.indexOf("/", i + 1)) n++;
  return n;
}

/** The uid one level up, or "" for a root. */
export function parentOf(uid: string): string {
  const i = uid.lastIndexOf("/");
  return i < 0 ? "" : uid.slice(0, i);
}

/** The root segment of a uid: the organization it belongs to. */
export function rootOf(uid: string): string {
  const i = uid.indexOf("/");
  return i < 0 ? uid : uid.slice(0, i);
}

/** Whether `uid` is `ancestor` itself or lies below it. */
export function isAtOrBelow(uid: string, ancestor: string): boolean {
  return uid === ancestor || uid.startsWith(`${ancestor}/`);
}
