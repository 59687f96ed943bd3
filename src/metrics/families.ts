import type { Registry } from "prom-client";

// Metric families kept as plain numbers, exposed through prom-client's registry at scrape
// time. prom-client's own label children re-validate and re-hash their labels on every
// inc() and observe() (a few strings and objects a call); a cell here is found once, kept,
// and counting into it allocates nothing.

/** One series of a counter family: add to `value`. */
export interface CounterCell {
  value: number;
}

/** One series of a histogram family; record with observe(). */
export interface HistogramCell {
  count: number;
  sum: number;
  /** Observations per bucket, not cumulative; the last slot is above every bound (+Inf). */
  readonly buckets: Float64Array;
}

/** A family of series with fixed label names, each series made once by cell(). */
export interface Family<C> {
  /** The series of these label values (in labelNames order), made on first use. */
  cell(values: readonly string[]): C;
}

interface Series<C> {
  labels: Record<string, string>;
  cell: C;
}

/** Register a counter family on `registry`. */
export function counterFamily(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly string[],
): Family<CounterCell> {
  const series = new Map<string, Series<CounterCell>>();
  registerCollector(registry, name, () => ({
    name,
    help,
    type: "counter",
    values: [...series.values()].map((s) => ({ labels: s.labels, value: s.cell.value })),
  }));
  return {
    cell: (values) => made(series, labelNames, values, () => ({ value: 0 })),
  };
}

/** Register a histogram family on `registry` with upper bounds `bounds` (ascending). */
export function histogramFamily(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly string[],
  bounds: readonly number[],
): Family<HistogramCell> {
  const series = new Map<string, Series<HistogramCell>>();
  registerCollector(registry, name, () => {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] =
      [];
    for (const { labels, cell } of series.values()) {
      let cumulative = 0;
      bounds.forEach((le, i) => {
        cumulative += cell.buckets[i]!;
        values.push({ labels: { ...labels, le }, value: cumulative, metricName: `${name}_bucket` });
      });
      values.push({
        labels: { ...labels, le: "+Inf" },
        value: cell.count,
        metricName: `${name}_bucket`,
      });
      values.push({ labels, value: cell.sum, metricName: `${name}_sum` });
      values.push({ labels, value: cell.count, metricName: `${name}_count` });
    }
    return { name, help, type: "histogram", values };
  });
  return {
    cell: (values) =>
      made(series, labelNames, values, () => ({
        count: 0,
        sum: 0,
        buckets: new Float64Array(bounds.length + 1),
      })),
  };
}

/** Record one observation of `value` into `cell` of a histogram with `bounds`. */
export function observe(cell: HistogramCell, bounds: readonly number[], value: number): void {
  let i = 0;
  while (i < bounds.length && value > bounds[i]!) i++;
  cell.buckets[i]!++;
  cell.count++;
  cell.sum += value;
}

function made<C>(
  series: Map<string, Series<C>>,
  labelNames: readonly string[],
  values: readonly string[],
  fresh: () => C,
): C {
  const key = values.join("\u0000");
  let s = series.get(key);
  if (!s) {
    const labels: Record<string, string> = {};
    labelNames.forEach((n, i) => {
      labels[n] = values[i] ?? "";
    });
    s = { labels, cell: fresh() };
    series.set(key, s);
  }
  return s.cell;
}

/** Register a metric whose samples are computed at scrape time. */
function registerCollector(registry: Registry, name: string, get: () => object): void {
  registry.registerMetric({ name, get } as never);
}
