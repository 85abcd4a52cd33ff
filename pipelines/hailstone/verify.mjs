#!/usr/bin/env node
// The hailstone recipe's verifier: a machine-checkable stop check. It reads the
// sequence file and checks that it is exactly the Collatz sequence from START
// (each term derived from the one before), prints the last term, and exits 0
// when the file is a correct prefix, 1 when it is not.
import { existsSync, readFileSync } from "node:fs";

const [file, startText] = process.argv.slice(2);
const start = Number(startText);
if (!existsSync(file)) {
  console.log(`verify: ${file} does not exist`);
  process.exit(1);
}
const terms = readFileSync(file, "utf8").split(/\s+/).filter(Boolean);
const numbers = terms.map(Number);
const problems = [];
if (numbers.length === 0) problems.push("the file is empty");
if (numbers.length > 0 && numbers[0] !== start) problems.push(`term 1 is ${terms[0]}, expected ${start}`);
for (let i = 1; i < numbers.length; i++) {
  const prev = numbers[i - 1];
  const want = prev % 2 === 0 ? prev / 2 : 3 * prev + 1;
  if (prev === 1) problems.push(`term ${i + 1} follows 1: the sequence should have stopped`);
  else if (numbers[i] !== want) problems.push(`term ${i + 1} is ${terms[i]}, expected ${want}`);
}
if (problems.length > 0) {
  for (const p of problems) console.log(`verify: ${p}`);
  process.exit(1);
}
console.log(`terms: ${numbers.length}`);
console.log(`last: ${numbers.at(-1)}`);
