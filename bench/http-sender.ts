import http from "node:http";

/**
 * A sender of one HTTP/1.1 request over `agent`'s kept-alive connections, for the open-loop
 * generator; any status but 200 fails. A body given as a function is made anew per request.
 */
export function httpSender(
  agent: http.Agent,
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string | (() => string) },
): () => Promise<void> {
  const u = new URL(url);
  return () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        {
          agent,
          host: u.hostname,
          port: u.port,
          path: u.pathname + u.search,
          method: opts.method ?? "GET",
          headers: opts.headers ?? {},
        },
        (res) => {
          res.resume();
          res.on("end", () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`${url}: ${res.statusCode}`)),
          );
        },
      );
      req.on("error", reject);
      req.end(typeof opts.body === "function" ? opts.body() : opts.body);
    });
}
