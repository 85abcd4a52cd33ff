// The test command. `npm test`: the suite on Node (vitest) without the long suites, and on
// Deno (`deno run -A npm:vitest`) the tests that run phaseloop's code in the test process
// (the end-to-end tests start the Node CLI, which the Node pass already ran); about ten
// minutes on two cores. `npm run test:long` (what CI adds): the long suites on Node, and
// on Deno everything `npm test` left out (but the suites that only drive the Node CLI), so
// that the two together run the whole suite on both runtimes. Given paths, it runs those on
// both runtimes (--node-only, --deno-only). --list prints each pass's files and runs nothing.
//
// It ends with the skipped tests and why (each skip says why through test/skip-reason.ts),
// then one closing line "N passed, N failed, N skipped". With PHASELOOP_TEST_TOTALS set, the
// totals are also appended to that file as a JSON line (.ci/run adds them up). Exits non-zero
// when any test failed or a runner could not start.
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Suites that take minutes each (measured from vitest's per-file durations): the real agent
 * CLIs against their API mocks, a kill at every system call of a run, lanes killed and
 * resumed, and the first-day suite (a fresh clone, npm ci, every recipe and documented
 * pipeline). CI runs them: npm run test:long.
 */
export const LONG = ["test/agents-contract/", "test/cli/crash-points.test.ts", "test/cli/lanes-durable.test.ts", "test/first-day/"];

/** What Deno runs in `npm test`: the tests of code that runs in the test process itself... */
export const DENO_SUBSET = ["test/machine/", "test/expr/", "test/pipeline/", "test/runtime/", "test/host/", "test/changes/", "test/agents/", "test/mcp/", "test/reporters/", "test/records/", "test/lanes/", "test/index.test.ts", "test/purity.test.ts", "test/layering.test.ts", "test/layering/", "test/run/format-event-line.test.ts"];
/** ...but its property suites of thousands of cases, which Deno runs in test:long. */
export const DENO_HEAVY = [/^test\/expr\/shell-context\.test\.ts$/, /^test\/pipeline\/properties\.test\.ts$/, /\.property\.test\.ts$/];

/**
 * Suites that only drive the Node-built CLI and real programs (agent CLIs, a fresh clone's
 * npm ci): run on Node only; under Deno they would run the same Node processes again.
 */
export const NODE_ONLY = ["test/agents-contract/", "test/first-day/", "test/mcp-server/claude-contract.test.ts", "test/mcp-server/gemini-contract.test.ts", "test/mcp-server/codex-contract.test.ts"];

const args = process.argv.slice(2);
const long = args.includes("--long");
const paths = args.filter((a) => !a.startsWith("--"));
const runtimes = args.includes("--node-only") ? ["node"] : args.includes("--deno-only") ? ["deno"] : ["node", "deno"];
const out = mkdtempSync(join(tmpdir(), "phaseloop-test-"));

/** Every test file, relative to the repository. */
function testFiles(dir = "test") {
  const found = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) found.push(...testFiles(rel));
    else if (rel.endsWith(".test.ts")) found.push(rel);
  }
  return found.sort();
}

const under = (file, list) => list.some((p) => (p.endsWith("/") ? file.startsWith(p) : file === p));
const inDenoSubset = (file) => under(file, DENO_SUBSET) && !DENO_HEAVY.some((re) => re.test(file)) && !under(file, LONG);

/** The test files of one runtime's pass (undefined: the paths given). */
function selection(runtime) {
  if (paths.length) return paths;
  const files = testFiles();
  if (runtime === "node") return files.filter((f) => under(f, LONG) === long);
  // Deno: npm test runs the subset; --long the rest, but what only drives the Node CLI
  return long ? files.filter((f) => !inDenoSubset(f) && !under(f, NODE_ONLY)) : files.filter(inDenoSubset);
}

if (args.includes("--list")) {
  for (const runtime of runtimes) for (const f of selection(runtime)) console.log(`${runtime} ${f}`);
  process.exit(0);
}

let passed = 0;
let failed = 0;
let skipped = 0;
let broken = false;
const reasons = [];
for (const runtime of runtimes) {
  const report = join(out, `${runtime}.json`);
  const skipLog = join(out, `${runtime}-skips.jsonl`);
  const filters = selection(runtime);
  if (filters.length === 0) continue;
  const vitestArgs = ["run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...filters];
  const [cmd, cmdArgs] =
    runtime === "node"
      ? [process.execPath, [join(root, "node_modules/vitest/vitest.mjs"), ...vitestArgs]]
      : [process.execPath, [join(root, "node_modules/deno/bin.cjs"), "run", "-A", "npm:vitest", ...vitestArgs]];
  console.log(`\n── ${runtime}: vitest, ${paths.length ? paths.join(" ") : `${filters.length} test files${long ? " (the long suites)" : ""}`}`);
  const r = spawnSync(cmd, cmdArgs, { cwd: root, stdio: "inherit", env: { ...process.env, PHASELOOP_TEST_RUNTIME: runtime, PHASELOOP_SKIP_LOG: skipLog } });
  if (!existsSync(report)) {
    console.error(`${runtime}: vitest wrote no report (exit ${r.status})`);
    broken = true;
    continue;
  }
  const json = JSON.parse(readFileSync(report, "utf8"));
  const p = json.numPassedTests ?? 0;
  const f = (json.numFailedTests ?? 0) + (json.numRuntimeErrorTestSuites ?? 0);
  const s = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
  console.log(`${runtime}: ${p} passed, ${f} failed, ${s} skipped`);
  passed += p;
  failed += f;
  skipped += s;
  if (r.status !== 0 && f === 0) {
    console.error(`${runtime}: vitest exited ${r.status}`);
    broken = true;
  }
  reasons.push(...skipReasons(runtime, json, skipLog));
}
if (skipped > 0) {
  console.log(`\nskipped (${skipped}), and why:`);
  for (const line of reasons) console.log(`  ${line}`);
}
if (process.env.PHASELOOP_TEST_TOTALS) appendFileSync(process.env.PHASELOOP_TEST_TOTALS, JSON.stringify({ passed, failed: failed + (broken ? 1 : 0), skipped }) + "\n");
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || broken ? 1 : 0);

/** Per test file with skipped tests: how many, and the reasons its skips gave. */
function skipReasons(runtime, json, skipLog) {
  const given = new Map();
  if (existsSync(skipLog)) {
    for (const line of readFileSync(skipLog, "utf8").split("\n")) {
      if (!line) continue;
      const { file, reason } = JSON.parse(line);
      if (!given.has(file)) given.set(file, new Set());
      given.get(file).add(reason);
    }
  }
  const lines = [];
  for (const suite of json.testResults ?? []) {
    const n = (suite.assertionResults ?? []).filter((a) => a.status === "pending" || a.status === "skipped" || a.status === "todo").length;
    if (n === 0) continue;
    const file = relative(root, suite.name);
    const why = given.get(file);
    lines.push(`${runtime}: ${file}: ${n} — ${why ? [...why].join("; ") : "skipped in the file itself (it.skip, it.todo or a condition inside a test)"}`);
  }
  return lines;
}
