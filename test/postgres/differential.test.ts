import { describeKnownDifferences, describeProperties } from "../helpers/differential-property.js";
import { describeEveryMethod, useDifferentialPair } from "../helpers/differential-suite.js";
import type { Backend } from "../helpers/test-server.js";

// The differential suite of test/grpc/differential.test.ts on PostgreSQL: the store's own
// errors and orderings reach both paths, and must reach the caller alike.

const backend: Backend = "postgres";
const state = useDifferentialPair(backend);
describeEveryMethod(state);
describeProperties(state);
describeKnownDifferences(state);
