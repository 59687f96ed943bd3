import { expect } from "vitest";

/**
 * What `gatehouse bootstrap` prints: one JSON object with the new organization, its workload
 * identity, a token for it, and the token's expiry (the README's first steps read these keys).
 */
export function expectBootstrapOutput(stdout: string): void {
  expect(Object.keys(JSON.parse(stdout)).sort()).toEqual([
    "expiry",
    "identityUid",
    "orgUid",
    "token",
  ]);
}
