#!/usr/bin/env node
// phaseloop benchmarks. Each figure is a ratio against a baseline measured in
// the same run on the same machine, so shared or slow machines do not skew it.
//   node bench/run.mjs            measure and print
//   node bench/run.mjs --check    also fail when a bar of the brief is missed
//   node bench/run.mjs --quick    fewer repetitions
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "dist/cli.cjs");
const quick = process.argv.includes("--quick");
const check = process.argv.includes("--check");
const node = process.execPath;
const env = { ...process.env, NO_COLOR: "1", CI: "true" };

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const time = (argv, opts = {}) => {
  const t = process.hrtime.bigint();
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ["ignore", "ignore", "pipe"], env, ...opts });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.status !== 0 && !opts.allowFail) throw new Error(`${argv.join(" ")} failed: ${r.stderr}`);
  return ms;
};

const results = [];
const report = (name, value, baseline, bar, unit = "ms") => {
  const ratio = baseline ? value / baseline : undefined;
  const ok = bar === undefined ? true : ratio !== undefined ? ratio <= bar : value <= bar.max;
  results.push({ name, value, baseline, ratio, bar, ok });
  const barText = bar === undefined ? "" : ratio !== undefined ? ` (bar ≤ ${bar}×)` : ` (bar ≤ ${bar.max}${unit})`;
  console.log(`${ok ? "ok  " : "MISS"} ${name}: ${value.toFixed(1)}${unit}${baseline ? ` vs ${baseline.toFixed(1)}${unit} = ${ratio.toFixed(2)}×` : ""}${barText}`);
};

const work = mkdtempSync(join(tmpdir(), "phaseloop-bench-"));
try {
  // 1. startup: --version and validate against node -e 0, interleaved
  const small = join(work, "small.yaml");
  writeFileSync(small, "phaseloop: 1\nname: small\nphases:\n  a:\n    run: 'true'\n    next:\n      - if: exit_code == 0\n        stop: complete\nstop: { max_iterations: 3 }\n");
  const n = quick ? 7 : 21;
  const base = [], version = [], validate = [];
  for (let i = 0; i < 3; i++) time([node, cli, "validate", small]); // warm the file cache
  for (let i = 0; i < n; i++) {
    base.push(time([node, "-e", "0"]));
    version.push(time([node, cli, "--version"]));
    validate.push(time([node, cli, "validate", small]));
  }
  report("startup: phaseloop --version", median(version), median(base), 1.5);
  report("startup: phaseloop validate (small pipeline)", median(validate), median(base), 1.5);

  // 2. scale: validate and compile a 1,000-phase pipeline
  const big = join(work, "big.yaml");
  let text = "phaseloop: 1\nname: big\nphases:\n";
  for (let i = 0; i < 1000; i++) text += `  p${i}:\n    run: echo {{ iteration }}\n    next:\n      - if: exit_code != 0 && phases.p${Math.max(0, i - 1)}.status == 'failed'\n        stop: failed\n      - goto: ${i === 999 ? "p0" : `p${i + 1}`}\n`;
  text += "stop:\n  max_iterations: 1\n  when:\n    - if: iteration > 1\n      outcome: complete\n";
  writeFileSync(big, text);
  const bigRuns = [];
  for (let i = 0; i < (quick ? 3 : 5); i++) bigRuns.push(time([node, cli, "graph", big]));
  report("scale: validate + compile + draw a 1,000-phase pipeline", median(bigRuns) - median(base), undefined, { max: 500 });

  // 3. loop overhead: 1,000 iterations of `true` against a plain Node loop spawning `true`
  const iterations = quick ? 300 : 1000;
  const loopDir = join(work, "loop");
  mkdirSync(loopDir);
  const loopYaml = join(work, "loop.yaml");
  writeFileSync(loopYaml, `phaseloop: 1\nname: loop\nphases:\n  tick:\n    run: ['true']\n    next:\n      - if: iteration >= ${iterations}\n        stop: complete\n      - goto: tick\nstop: { max_iterations: ${iterations} }\n`);
  const plain = join(work, "plain.mjs");
  writeFileSync(plain, `import { spawn } from "node:child_process";\nfor (let i = 0; i < ${iterations}; i++) await new Promise((r) => spawn("true", [], { stdio: ["ignore", "pipe", "pipe"] }).on("close", r));\n`);
  const loopTimes = [], plainTimes = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) {
    rmSync(join(loopDir, ".phaseloop"), { recursive: true, force: true });
    plainTimes.push(time([node, plain]));
    loopTimes.push(time([node, cli, "run", loopYaml, "--workdir", loopDir, "--reporter", "plain"], { stdio: ["ignore", "ignore", "pipe"] }));
  }
  report(`loop overhead: ${iterations} iterations of \`true\`, durable state included`, median(loopTimes), median(plainTimes), 1.3);

  // 4. status on a run with 100,000 events
  const runDir = join(work, "status", ".phaseloop", "runs", "20260101-000000-bench");
  mkdirSync(runDir, { recursive: true });
  const lines = [];
  const at = "2026-01-01T00:00:00.000Z";
  lines.push(JSON.stringify({ v: 1, seq: 1, at, run: "20260101-000000-bench", type: "run.started", pipeline: "bench", file: "/x.yaml", hash: "sha256:0", workdir: "/w", params: {}, max_iterations: 50000, phases: ["a"], version: "0" }));
  for (let seq = 2; seq <= 100_000; seq++) {
    const it = Math.ceil(seq / 2);
    lines.push(seq % 2 ? JSON.stringify({ v: 1, seq, at, run: "20260101-000000-bench", type: "phase.started", iteration: it, phase: "a", attempt: 1, kind: "run", dir: "phases/x", command: ["true"] }) : JSON.stringify({ v: 1, seq, at, run: "20260101-000000-bench", type: "phase.finished", iteration: it, phase: "a", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 2, tokens: 10, cost_usd: 0.001, output: { n: seq }, changes: [] }));
  }
  writeFileSync(join(runDir, "events.jsonl"), lines.join("\n") + "\n");
  writeFileSync(join(runDir, "run.json"), JSON.stringify({ run_id: "20260101-000000-bench", pipeline: "bench", file: "/x.yaml", hash: "sha256:0", params: {}, workdir: "/w" }));
  const statusTimes = [];
  let peak = 0;
  for (let i = 0; i < 3; i++) {
    statusTimes.push(time([node, cli, "status", "--workdir", join(work, "status")]));
    const r = spawnSync("/usr/bin/time", ["-f", "%M", node, cli, "status", "--workdir", join(work, "status")], { encoding: "utf8", env });
    const kb = Number(r.stderr.trim().split("\n").pop());
    if (Number.isFinite(kb)) peak = Math.max(peak, kb / 1024);
  }
  report("status on a run with 100,000 events", median(statusTimes), undefined, { max: 1000 });
  if (peak > 0) report("status on a run with 100,000 events: peak memory", peak, undefined, { max: 150 }, " MB");
} finally {
  rmSync(work, { recursive: true, force: true });
}

const missed = results.filter((r) => !r.ok);
console.log(`\n${results.length - missed.length} of ${results.length} bars met`);
if (check && missed.length) process.exit(1);
