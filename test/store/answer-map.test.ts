import { describe, expect, it } from "vitest";
import { answerBytes, createAnswerMap } from "../../src/store/access-answers.js";

const uids = (n: number, tag: string) =>
  Array.from(
    { length: n },
    (_, i) => `${tag}${"0".repeat(40)}/${i.toString(16).padStart(16, "0")}`,
  );

describe("access cache answers", () => {
  it("are held within a byte budget, the oldest dropped first, whatever their number", () => {
    const budget = 1_000_000;
    const answers = createAnswerMap(budget, 10_000);
    // An identity's groups: 2,000 uids of 57 characters, about 200 kB an answer.
    const big = (i: number) => uids(2000, String(i));
    for (let i = 0; i < 20; i++) answers.set(`k${i}`, big(i));
    expect(answers.heldBytes).toBeLessThanOrEqual(budget);
    expect(answers.has("k0")).toBe(false);
    expect(answers.has("k19")).toBe(true);
    expect(answers.get("k19")).toEqual(big(19));
    // Small answers: only the entry cap bounds them.
    const small = createAnswerMap(budget, 100);
    for (let i = 0; i < 150; i++) small.set(`id${i}`, true);
    expect(small.has("id49")).toBe(false);
    expect(small.has("id50")).toBe(true);
    small.clear();
    expect(small.heldBytes).toBe(0);
  });

  it("count a set of interned names by its size, not by the names", () => {
    const names = Array.from({ length: 60 }, (_, i) => `gatehouse.capability.${i}`);
    const set = new Set(names);
    expect(answerBytes("k", set)).toBeLessThan(answerBytes("k", names));
    // Storing the same key again replaces the answer and its bytes.
    const answers = createAnswerMap(100_000, 10);
    answers.set("k", names);
    answers.set("k", set);
    expect(answers.heldBytes).toBe(answerBytes("k", set));
  });
});
