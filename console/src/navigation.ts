import { useEffect, useState } from "preact/hooks";

// How many times the person navigated: every change of the route, and every click on a link to
// the page already shown (the active tab), which changes no route but means "show it again".
let count = 0;
const listeners = new Set<(n: number) => void>();

function navigated() {
  count++;
  for (const l of listeners) l(count);
}

addEventListener("hashchange", navigated);
document.addEventListener(
  "click",
  (e) => {
    const a = (e.target as Element | null)?.closest?.("a[href]") as HTMLAnchorElement | null;
    if (a && a.pathname === location.pathname && a.hash !== "" && a.hash === location.hash) {
      navigated();
    }
  },
  true,
);

/** A number that changes on every navigation: lists read again when it does. */
export function useNavigations(): number {
  const [n, setN] = useState(count);
  useEffect(() => {
    listeners.add(setN);
    return () => {
      listeners.delete(setN);
    };
  }, []);
  return n;
}
