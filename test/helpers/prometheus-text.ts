/** One sample of a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A parsed exposition: every sample, and each family's TYPE. */
export interface Exposition {
  samples: Sample[];
  types: Map<string, string>;
}

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const labelName = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const kinds = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

/**
 * Parse the Prometheus text format (version 0.0.4) strictly: every line must be a HELP, a
 * TYPE (once per family, before its samples), empty, or a sample of a typed family, with valid
 * names, escaped label values and float values; histograms' buckets must be cumulative and
 * end in +Inf equal to their _count. Throws naming the line on anything else.
 */
export function parsePrometheusText(text: string): Exposition {
  if (!text.endsWith("\n")) throw new Error("the exposition must end with a newline");
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const lines = text.slice(0, -1).split("\n");
  lines.forEach((line, i) => {
    const fail = (why: string): never => {
      throw new Error(`line ${i + 1}: ${why}: ${JSON.stringify(line)}`);
    };
    // The format ignores empty lines (prom-client puts one between families).
    if (line === "") return;
    if (line.startsWith("# HELP ")) {
      const [name] = line.slice(7).split(" ", 1);
      if (!metricName.test(name ?? "")) fail("bad metric name");
      return;
    }
    if (line.startsWith("# TYPE ")) {
      const [name, kind, extra] = line.slice(7).split(" ");
      if (!metricName.test(name ?? "") || !kinds.has(kind ?? "") || extra !== undefined) {
        fail("bad TYPE line");
      }
      if (types.has(name!)) fail("TYPE given twice");
      types.set(name!, kind!);
      return;
    }
    if (line.startsWith("#")) fail("unexpected comment");
    const m =
      /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line) ?? fail("bad sample");
    const name = m[1]!;
    const family = [name, name.replace(/_(bucket|sum|count|total|created)$/, "")].find((n) =>
      types.has(n),
    );
    if (!family) fail("sample of a family without TYPE");
    const labels: Record<string, string> = {};
    let rest = m[3] ?? "";
    while (rest !== "") {
      const l = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/.exec(rest);
      if (!l || !labelName.test(l[1]!)) fail("bad label");
      if (l![1]! in labels) fail("label given twice");
      labels[l![1]!] = l![2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === "n" ? "\n" : c));
      rest = rest.slice(l![0].length);
    }
    // Prometheus reads values with Go's ParseFloat, which takes NaN and Inf in any case
    // (prom-client writes an event-loop mean with no samples yet as "Nan").
    const raw = m[4]!;
    const special = /^(nan|[+-]?inf)$/i.test(raw);
    const value = special
      ? raw.toLowerCase() === "nan"
        ? Number.NaN
        : raw.startsWith("-")
          ? -Infinity
          : Infinity
      : Number(raw);
    if (!special && (raw.trim() === "" || Number.isNaN(value))) fail("bad value");
    samples.push({ name, labels, value });
  });
  checkHistograms(samples, types);
  return { samples, types };
}

function checkHistograms(samples: Sample[], types: Map<string, string>): void {
  for (const [family, kind] of types) {
    if (kind !== "histogram") continue;
    const series = new Map<string, { le: number; v: number }[]>();
    for (const s of samples.filter((x) => x.name === `${family}_bucket`)) {
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${family}_bucket without le`);
      const key = JSON.stringify(rest);
      const list = series.get(key) ?? [];
      list.push({ le: le === "+Inf" ? Infinity : Number(le), v: s.value });
      series.set(key, list);
    }
    for (const [key, buckets] of series) {
      for (let i = 1; i < buckets.length; i++) {
        if (!(buckets[i]!.le > buckets[i - 1]!.le) || buckets[i]!.v < buckets[i - 1]!.v) {
          throw new Error(`${family}${key}: buckets not cumulative`);
        }
      }
      const last = buckets[buckets.length - 1]!;
      const count = samples.find(
        (s) => s.name === `${family}_count` && JSON.stringify(s.labels) === key,
      );
      if (last.le !== Infinity || count?.value !== last.v) {
        throw new Error(`${family}${key}: +Inf bucket must equal _count`);
      }
    }
  }
}

/** The value of the sample named `name` whose labels include `labels` (0 if none). */
export function sampleValue(e: Exposition, name: string, labels: Record<string, string>): number {
  const found = e.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return found?.value ?? 0;
}
