import { describeKnownDifferences, describeProperties } from "../helpers/differential-property.js";
import { describeEveryMethod, useDifferentialPair } from "../helpers/differential-suite.js";
import type { Backend } from "../helpers/test-server.js";

// The lean paths against the Connect router over every served unary method, and for any
// headers and body, on SQLite (test/postgres/differential.test.ts runs the same on PostgreSQL).

const backend: Backend = "sqlite";
const state = useDifferentialPair(backend);
describeEveryMethod(state);
describeProperties(state);
describeKnownDifferences(state);
