/** The part of autocannon's API the benchmark uses (the package ships no types). */
declare module "autocannon" {
  namespace autocannon {
    interface Options {
      url: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      connections?: number;
      /** Requests each connection has in flight at once (HTTP/1.1 pipelining). */
      pipelining?: number;
      overallRate?: number;
      duration?: number;
      /** Stop after this many requests (instead of after `duration`). */
      amount?: number;
      requests?: {
        setupRequest?: (req: { headers: Record<string, string> }) => {
          headers: Record<string, string>;
        };
        onResponse?: (status: number) => void;
      }[];
    }
    interface Result {
      /** Per-second averages; `total`: every request answered during the run. */
      requests: { average: number; total: number };
      latency: { p50: number; p99: number; average: number };
      non2xx: number;
      "2xx": number;
      errors: number;
      timeouts: number;
    }
  }
  function autocannon(opts: autocannon.Options): Promise<autocannon.Result>;
  export default autocannon;
}
