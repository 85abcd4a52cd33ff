#!/usr/bin/env node
// The hailstone recipe's scripted agent: it plays the part of a coding agent that
// does exactly one atomic step per iteration. It reads its prompt on stdin (and
// logs it, as an agent would), then appends the next number of the Collatz
// sequence to the sequence file, and reports what it did on its last line.
import { appendFileSync, existsSync, readFileSync } from "node:fs";

const [file, startText] = process.argv.slice(2);
if (!file || !startText) {
  console.error("usage: agent.mjs FILE START");
  process.exit(64);
}
let prompt = "";
try {
  prompt = readFileSync(0, "utf8");
} catch {
  // stdin closed: the prompt is optional for this agent
}
const firstLine = prompt.split("\n").find((l) => l.trim() !== "") ?? "";
console.log(`prompt: ${firstLine.slice(0, 100)}`);

const numbers = existsSync(file)
  ? readFileSync(file, "utf8").split(/\s+/).filter(Boolean).map(Number)
  : [];
const last = numbers.at(-1);
let next;
if (last === undefined) next = Number(startText);
else if (last === 1) next = undefined;
else next = last % 2 === 0 ? last / 2 : 3 * last + 1;

if (next === undefined) {
  console.log("STATUS: DONE (the sequence already reached 1)");
} else {
  appendFileSync(file, `${next}\n`);
  console.log(`appended ${next} (term ${numbers.length + 1})`);
}
