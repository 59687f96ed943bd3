import { useEffect, useState } from "preact/hooks";
import type { Capability } from "../../src/auth/capability-catalog.js";
import { api } from "./api.js";

/**
 * Whether the signed-in caller holds a capability at the group a page shows. Typed by the
 * catalog: a misspelled capability in a tab fails to compile instead of hiding a button.
 */
export type Can = (capability: Capability) => boolean;

/**
 * The caller's capabilities at `uid`, from ListCallerCapabilities: the console offers only the
 * actions the server would allow. Nothing is offered until the answer is in (or if it fails).
 */
export function useCan(uid: string, version = 0): Can {
  const [held, setHeld] = useState<ReadonlySet<string>>(new Set());
  useEffect(() => {
    let live = true;
    api.access
      .listCallerCapabilities({ groupUid: uid })
      .then((r) => live && setHeld(new Set(r.capabilities)))
      .catch(() => live && setHeld(new Set()));
    return () => {
      live = false;
    };
  }, [uid, version]);
  return (capability) => held.has(capability);
}
