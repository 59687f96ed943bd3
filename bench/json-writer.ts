/**
 * `npm run build && node dist/bench/json-writer.js [--rounds=8]`: the CPU a REST answer's JSON
 * costs, written as the gateway wrote it before (protobuf-es's reflective toJson, then the
 * Timestamps' millisecond fix, then JSON.stringify) and with the writer built once per message
 * type (src/json/message-json.ts), for a GetGroup answer and a ListGroups page of 50, in
 * alternating rounds of the same run: the figure is the ratio, not the microseconds, which a
 * shared machine moves. Both sides' outputs are checked equal first.
 */
import { create, toJson } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { GroupSchema, ListGroupsResponseSchema } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { createJsonWriter } from "../src/json/message-json.js";
import { millisecondTimestamps } from "../src/json/timestamp-json.js";
import { isInputOnly } from "../src/rest/input-only.js";

const rounds = Number(
  process.argv.find((a) => a.startsWith("--rounds="))?.slice("--rounds=".length) ?? 8,
);
const now = Date.now();
const group = (i: number) =>
  create(GroupSchema, {
    uid: `org1234567/g${i}abcdefgh`,
    name: `group-${i}`,
    description: i % 2 ? "a group of the benchmark" : "",
    // Whole seconds and fractions both.
    createTime: timestampFromMs(Math.floor(now / 1000) * 1000),
    updateTime: timestampFromMs(now + i),
  });
const cases = [
  { name: "GetGroup answer", desc: GroupSchema, message: group(1) },
  {
    name: "ListGroups page of 50",
    desc: ListGroupsResponseSchema,
    message: create(ListGroupsResponseSchema, {
      groups: Array.from({ length: 50 }, (_, i) => group(i)),
      totalCount: 1000n,
      nextPageToken: "token",
    }),
  },
];
const options = { alwaysEmitImplicit: true, omit: isInputOnly };

/** CPU microseconds per call of `fn`, over about 200 ms. */
function cpuPerCall(fn: () => string): number {
  let n = 0;
  const start = process.cpuUsage();
  const until = performance.now() + 200;
  while (performance.now() < until) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

console.log(`JSON of a REST answer, CPU per message, ${rounds} alternating rounds`);
console.log("| answer | toJson + fix + stringify | writer | writer/toJson [min..max] |");
console.log("|---|---|---|---|");
for (const c of cases) {
  const fix = millisecondTimestamps(c.desc);
  const before = () => JSON.stringify(fix(toJson(c.desc, c.message as never, options)));
  const write = createJsonWriter(c.desc, options);
  const after = () => write(c.message);
  if (before() !== after()) throw new Error(`${c.name}: the two outputs differ`);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // The first side alternates, so that drift falls on both.
    if (r % 2) {
      a.push(cpuPerCall(before));
      b.push(cpuPerCall(after));
    } else {
      b.push(cpuPerCall(after));
      a.push(cpuPerCall(before));
    }
  }
  const ratios = b.map((x, i) => x / a[i]!).sort((x, y) => x - y);
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  console.log(
    `| ${c.name} | ${median(a).toFixed(2)} us | ${median(b).toFixed(2)} us | ${median(ratios).toFixed(2)} [${ratios[0]!.toFixed(2)}..${ratios.at(-1)!.toFixed(2)}] |`,
  );
}
