#!/usr/bin/env node
// phaseloop benchmarks. Each figure is a ratio against a baseline measured in
// the same run on the same machine, so shared or slow machines do not skew it.
//   node bench/run.mjs            measure and print
//   node bench/run.mjs --check    also fail when a bar of the brief is missed
//   node bench/run.mjs --quick    fewer repetitions, shorter runs
//   node bench/run.mjs --only=NAME  the cases whose name contains NAME (startup, scale, loop, live view, long run, output, status, measure, agent loop, sandbox, lanes)
//   node bench/run.mjs --no-100k    measure without the 100,000-file repository (generated once, then kept
//                                   under the OS temp dir as phaseloop-bench-repos/)
import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, writeFileSync, writeSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { BARE_BWRAP, benchSandbox } from "./sandbox.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "dist/cli.cjs");
const quick = process.argv.includes("--quick");
const check = process.argv.includes("--check");
const node = process.execPath;
const only = process.argv.find((a) => a.startsWith("--only="))?.slice(7);
const wanted = (name) => only === undefined || name.includes(only);
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

/** Run a command to its end, sampling its resident memory every 50 ms. */
const sampledRun = (argv) =>
  new Promise((resolvePromise, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "ignore", "pipe"], env });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const samples = [];
    const timer = setInterval(() => {
      try {
        const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1]);
        if (kb) samples.push([Date.now(), kb / 1024]);
      } catch {
        // gone
      }
    }, 50);
    child.on("close", (code) => {
      clearInterval(timer);
      if (code !== 0) reject(new Error(`${argv.join(" ")} failed: ${stderr}`));
      else resolvePromise({ ms: Number(process.hrtime.bigint() - started) / 1e6, samples });
    });
  });

/**
 * Each timed case starts once what the cases before it wrote is on disk: writeback of a
 * previous case's files would take CPU and disk from it, and ext4 without a journal keeps
 * an inode freed nearby from being handed out again for 35 s while its table block is
 * unwritten (5 s once written), making every file created meanwhile slower. Both cost
 * phaseloop, which makes files at every phase, more than a baseline that makes none.
 */
const settleDisk = () => spawnSync("sync");

const results = [];
const report = (name, value, baseline, bar, unit = "ms") => {
  const ratio = baseline ? value / baseline : undefined;
  const ok = bar === undefined ? true : ratio !== undefined ? ratio <= bar : bar.min !== undefined ? value >= bar.min : value <= bar.max;
  results.push({ name, value, baseline, ratio, bar, ok });
  const barText = bar === undefined ? "" : ratio !== undefined ? ` (bar ≤ ${bar}×)` : bar.min !== undefined ? ` (bar ≥ ${bar.min}${unit})` : ` (bar ≤ ${bar.max}${unit})`;
  console.log(`${ok ? "ok  " : "MISS"} ${name}: ${value.toFixed(1)}${unit}${baseline ? ` vs ${baseline.toFixed(1)}${unit} = ${ratio.toFixed(2)}×` : ""}${barText}`);
};

const work = mkdtempSync(join(tmpdir(), "phaseloop-bench-"));
// What a case is done with is put aside, not removed, until the end: on a disk that will
// not hand out an inode freed in the last seconds (ext4 without a journal), a removal makes
// every file created after it nearby slower, a cost of the bench rather than of what comes next.
const aside = join(work, "aside");
mkdirSync(aside);
let asideCount = 0;
const putAside = (path) => {
  if (existsSync(path)) renameSync(path, join(aside, String(asideCount++)));
};
try {
  if (wanted("startup") || wanted("scale")) {
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

    // 2b. validation stays linear: a phase of a 60,000-phase file (the most that fits the 2 MB
    // cap) against a phase of a 6,000-phase one, each timed less a 1-phase file's validate.
    // A check that compares every key with every other (as yaml's own duplicate-key check
    // did) makes the large file's phases ten times dearer; linear ones keep the ratio near 1.
    const flat = (n) => {
      const file = join(work, `flat-${n}.yaml`);
      let t = "phaseloop: 1\nname: flat\nphases:\n";
      for (let i = 0; i < n; i++) t += `  p${i}: {run: x, next: p${(i + 1) % n}}\n`;
      writeFileSync(file, `${t}stop: {max_iterations: 1, when: [{if: iteration > 1, outcome: complete}]}\n`);
      return file;
    };
    const one = flat(1), small6k = flat(6000), large60k = flat(60000);
    // (a warning per cycle: more stderr than spawnSync buffers by default)
    const perPhase = (file, n, floor) => (time([node, cli, "validate", file], { maxBuffer: 1 << 30 }) - floor) / n;
    const floors = [], smallPer = [], largePer = [];
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      const floor = time([node, cli, "validate", one]);
      floors.push(floor);
      smallPer.push(perPhase(small6k, 6000, floor));
      largePer.push(perPhase(large60k, 60000, floor));
    }
    report("scale: validate, per phase of a 60,000-phase file against a 6,000-phase one", median(largePer) * 1000, median(smallPer) * 1000, 2, "µs");
    // the same with a cycle on every phase (each retries itself): every cycle is found and
    // reported, and the search for them must not start over for each one
    const looped = (n) => {
      const file = join(work, `looped-${n}.yaml`);
      let t = "phaseloop: 1\nname: looped\nphases:\n";
      for (let i = 0; i < n; i++) t += `  p${i}: {run: x, next: [{if: exit_code != 0, goto: p${i}}, {goto: p${(i + 1) % n}}]}\n`;
      writeFileSync(file, `${t}stop: {max_iterations: 1, when: [{if: iteration > 1, outcome: complete}]}\n`);
      return file;
    };
    const loopedSmall = looped(1000), loopedLarge = looped(10000);
    const loopSmallPer = [], loopLargePer = [];
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      const floor = time([node, cli, "validate", one]);
      loopSmallPer.push(perPhase(loopedSmall, 1000, floor));
      loopLargePer.push(perPhase(loopedLarge, 10000, floor));
    }
    report("scale: validate, per phase of a 10,000-phase file with a cycle on each against a 1,000-phase one", median(loopLargePer) * 1000, median(loopSmallPer) * 1000, 2, "µs");
  }

  if (wanted("loop")) {
    settleDisk();
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
      putAside(join(loopDir, ".phaseloop"));
      plainTimes.push(time([node, plain]));
      // phaseloop's own work per iteration: the phase unfenced, as the plain loop spawns it
      loopTimes.push(time([node, cli, "run", loopYaml, "--workdir", loopDir, "--reporter", "plain", "--sandbox", "off"], { stdio: ["ignore", "ignore", "pipe"] }));
    }
    report(`loop overhead: ${iterations} iterations of \`true\`, durable state included, --sandbox off`, median(loopTimes), median(plainTimes), 1.3);
    // the same loop as it runs by default (each `run:` phase in the fence) against a Node loop
    // spawning a bare bubblewrap with the same namespaces around `true`: the floor of any fence
    const { probeSandbox } = await import(join(root, "dist/host/probe-sandbox.js"));
    if (probeSandbox().available) {
      const fencedIterations = Math.min(iterations, 200);
      const fencedYaml = join(work, "loop-fenced.yaml");
      writeFileSync(fencedYaml, `phaseloop: 1\nname: loop\nphases:\n  tick:\n    run: ['true']\n    next:\n      - if: iteration >= ${fencedIterations}\n        stop: complete\n      - goto: tick\nstop: { max_iterations: ${fencedIterations} }\n`);
      const bareLoop = join(work, "bare-bwrap.mjs");
      writeFileSync(bareLoop, `import { spawn } from "node:child_process";\nconst argv = ${JSON.stringify(BARE_BWRAP)};\nfor (let i = 0; i < ${fencedIterations}; i++) await new Promise((r) => spawn(argv[0], argv.slice(1), { cwd: ${JSON.stringify(loopDir)}, stdio: ["ignore", "pipe", "pipe"] }).on("close", r));\n`);
      // a bwrap launch is several times slower on a loaded machine than on a quiet one: rounds of
      // each in turn, the median of each, so that a burst of load lands on both
      // the honest floor: a Node loop launching the fence's own bwrap command line for this phase
      // (its namespaces and the mounts its profile needs), made once, started as phaseloop starts
      // it (bwrap directly, the filter handed over on fd 3)
      const floorLoop = join(work, "fence-floor.mjs");
      const distUrl = (rel) => JSON.stringify(new URL(`../dist/${rel}`, import.meta.url).href);
      writeFileSync(
        floorLoop,
        `import { spawn } from "node:child_process";\nimport { closeSync, mkdirSync, openSync } from "node:fs";\n` +
          `const session = await import(${distUrl("host/sandbox-session.js")});\nconst { compileSandbox } = await import(${distUrl("sandbox/compile-sandbox.js")});\nconst { fd3Launch } = await import(${distUrl("host/fd-launch.js")});\n` +
          `const temp = ${JSON.stringify(join(work, "floor-tmp"))};\nmkdirSync(temp, { recursive: true });\n` +
          `const profile = compileSandbox({ workdir: ${JSON.stringify(loopDir)}, home: process.env.HOME ?? "/nonexistent", tempDir: temp, agent: "command" });\n` +
          `const made = await session.wrapInSandbox(profile, ["true"], ${JSON.stringify(loopDir)}, {}, process.env.PATH);\nsession.releaseSandboxed(made);\n` +
          `const launch = fd3Launch(made.argv[0], made.argv.slice(1));\nconst env = { ...process.env, ...made.env };\n` +
          `for (let i = 0; i < ${fencedIterations}; i++) await new Promise((r) => { const fd = openSync(launch.file, "r"); const c = spawn(launch.program, launch.args, { cwd: ${JSON.stringify(loopDir)}, env, stdio: ["ignore", "pipe", "pipe", fd] }); closeSync(fd); c.on("close", r); });\n`,
      );
      const fenced = [], bare = [], floor = [];
      for (let i = 0; i < (quick ? 3 : 5); i++) {
        putAside(join(loopDir, ".phaseloop"));
        bare.push(time([node, bareLoop]));
        floor.push(time([node, floorLoop]));
        fenced.push(time([node, cli, "run", fencedYaml, "--workdir", loopDir, "--reporter", "plain"], { stdio: ["ignore", "ignore", "pipe"] }));
      }
      // the issue's measure, against the bare bwrap; the bar is against the floor, since the mounts
      // a phase needs cost bwrap itself more than the bare launch (docs/performance.md)
      report(`loop overhead, fenced (the default): ${fencedIterations} iterations of \`true\` in the OS sandbox, against a Node loop launching a bare bwrap with the same namespaces`, median(fenced), median(bare));
      report(`loop overhead, fenced (the default): the same, against a Node loop launching the fence's own bwrap command line`, median(fenced), median(floor), 1.3);
      console.log(`     (that command line's loop against the bare bwrap's: ${median(floor).toFixed(1)}ms vs ${median(bare).toFixed(1)}ms = ${(median(floor) / median(bare)).toFixed(2)}×)`);
    }

  
  }

  if (wanted("live view") && spawnSync("script", ["--version"]).status === 0) {
    // 3b. the live view keeps up with a quick loop: the same loop drawn in a terminal (a
    //     pseudo-terminal of 120x40 made by script(1)) against the same with --reporter plain in
    //     one, so that both pay for the terminal; an iteration too quick to follow is written as it ended
    const iterations = quick ? 500 : 2000;
    const dir = join(work, "live");
    mkdirSync(dir);
    const yaml = join(work, "live.yaml");
    writeFileSync(yaml, `phaseloop: 1\nname: live\nphases:\n  tick:\n    run: ['true']\n    next:\n      - if: iteration >= ${iterations}\n        stop: complete\n      - goto: tick\nstop: { max_iterations: ${iterations} }\n`);
    const { CI: _ci, GITHUB_ACTIONS: _gha, ...terminalEnv } = env;
    const inTerminal = (reporter) => {
      putAside(join(dir, ".phaseloop"));
      return time(["script", "-qefc", `stty cols 120 rows 40; exec '${node}' '${cli}' run '${yaml}' --workdir '${dir}' --reporter ${reporter}`, "/dev/null"], { env: terminalEnv });
    };
    const live = [], plainLines = [];
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      plainLines.push(inTerminal("plain"));
      live.push(inTerminal("tty"));
    }
    report(`live view: ${iterations} iterations of \`true\` drawn in a terminal, against plain lines in the same terminal`, median(live), median(plainLines), 1.2);
  }

  if (wanted("status")) {
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
  
  }

  // 5. a long run stays flat: RSS and the time per iteration near the end against near the start,
  //    and the loop's overhead over the Node spawn floor with durable state included
  if (wanted("long run")) {
    settleDisk();
    const n = quick ? 3000 : 10_000;
    const dir = join(work, "long");
    mkdirSync(dir);
    const yaml = join(work, "long.yaml");
    writeFileSync(yaml, `phaseloop: 1\nname: long\nphases:\n  tick:\n    run: ['true']\n    next:\n      - if: iteration >= ${n}\n        stop: complete\n      - goto: tick\nstop: { max_iterations: ${n} }\n`);
    const floor = join(work, "floor.mjs");
    writeFileSync(floor, `import { spawn } from "node:child_process";\nfor (let i = 0; i < ${n}; i++) await new Promise((r) => spawn("true", [], { stdio: ["ignore", "pipe", "pipe"] }).on("close", r));\n`);
    // the floor before and after the run, so that a machine drifting over the minute lands on both sides
    const floorBefore = time([node, floor]);
    const run = await sampledRun([node, cli, "run", yaml, "--workdir", dir, "--reporter", "plain", "--sandbox", "off"]);
    const floorMs = (floorBefore + time([node, floor])) / 2;
    const runDir = join(dir, ".phaseloop", "runs", readdirSync(join(dir, ".phaseloop", "runs"))[0]);
    const at = readFileSync(join(runDir, "iterations.jsonl"), "utf8").trim().split("\n").map((l) => Date.parse(JSON.parse(l).at));
    // per-iteration time: the median of ten 1%-blocks' means, around 10% and around 90% of the run
    const perIteration = (from) => {
      const block = Math.max(1, Math.floor(at.length / 100));
      const means = [];
      for (let b = 0; b < 10; b++) {
        const i = Math.floor(at.length * from) + b * block;
        means.push((at[i + block] - at[i]) / block);
      }
      return median(means);
    };
    const rssNear = (from) => {
      const t0 = at[Math.floor(at.length * (from - 0.05))], t1 = at[Math.floor(at.length * (from + 0.05))];
      return median(run.samples.filter(([t]) => t >= t0 && t <= t1).map(([, mb]) => mb));
    };
    report(`long run: RSS at 90% of ${n} iterations against at 10%`, rssNear(0.9), rssNear(0.1), 1.1, " MB");
    report(`long run: time per iteration at 90% against at 10%`, perIteration(0.85), perIteration(0.05), 1.1);
    report(`long run: ${n} iterations of \`true\`, durable state included, --sandbox off, against the Node spawn floor (the mean of one run before and one after)`, run.ms, floorMs, 1.2);
  }

  // 6. output at disk speed: a phase printing 100 MB of lines, read, logged and reported, against `cat > file`
  if (wanted("output")) {
    settleDisk();
    const dir = join(work, "output");
    mkdirSync(dir);
    const data = join(work, "lines.txt");
    const line = "phaseloop bench: a line of agent output, about as long as the lines agents print, 0123456789\n";
    const block = Buffer.from(line.repeat(10_000));
    const mb = 100;
    const fd = openSync(data, "w");
    for (let written = 0; written < mb * 1024 * 1024; written += block.length) writeSync(fd, block);
    closeSync(fd);
    const bytes = Math.ceil((mb * 1024 * 1024) / block.length) * block.length;
    const pipeline = (name, command) => {
      const file = join(work, `${name}.yaml`);
      writeFileSync(file, `phaseloop: 1\nname: ${name}\nphases:\n  talk:\n    run: ${JSON.stringify(command)}\n    next:\n      - stop: complete\nstop: { max_iterations: 1 }\n`);
      return file;
    };
    const loud = pipeline("loud", ["cat", data]);
    const quiet = pipeline("quiet", ["true"]);
    const runIt = (file) => {
      putAside(join(dir, ".phaseloop"));
      const t = process.hrtime.bigint();
      const r = spawnSync("/usr/bin/time", ["-f", "%M", node, cli, "run", file, "--workdir", dir, "--reporter", "plain"], { stdio: ["ignore", "ignore", "pipe"], env, encoding: "utf8" });
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      if (r.status !== 0) throw new Error(`phaseloop run ${file} failed: ${r.stderr}`);
      return { ms, peakMb: Number(r.stderr.trim().split("\n").pop()) / 1024 };
    };
    const copy = join(work, "copy.txt");
    const cats = [], louds = [], quiets = [];
    let peak = 0;
    for (let i = 0; i < (quick ? 3 : 5); i++) {
      cats.push(time(["sh", "-c", `cat '${data}' > '${copy}'`]));
      quiets.push(runIt(quiet).ms);
      const r = runIt(loud);
      louds.push(r.ms);
      peak = Math.max(peak, r.peakMb);
    }
    // the run's own cost (startup, state) is the same run with a silent phase
    const outputMs = median(louds) - median(quiets);
    const rate = bytes / 1048576 / (outputMs / 1000);
    report(`output: ${mb} MB of lines through a phase, against \`cat > file\``, outputMs, median(cats));
    report(`output: ${mb} MB of lines read, logged and reported`, rate, undefined, { min: 200 }, " MB/s");
    report(`output: ${mb} MB of lines: peak memory`, peak, undefined, { max: 100 }, " MB");
    if (!quick) {
      // whatever the size: five times as much output, the same bound
      const huge = pipeline("huge", ["sh", "-c", `for i in 1 2 3 4 5; do cat '${data}'; done`]);
      report(`output: ${5 * mb} MB of lines: peak memory`, runIt(huge).peakMb, undefined, { max: 100 }, " MB");
    }
    rmSync(copy, { force: true });
    rmSync(data, { force: true });
  }
  if (wanted("measure")) {
    settleDisk();
    (await import("./measure-changes.mjs")).benchMeasure({ work, quick, report, time, median, node, cli, putAside });
  }
  if (wanted("agent loop")) {
    settleDisk();
    const { probeSandbox } = await import(join(root, "dist/host/probe-sandbox.js"));
    (await import("./agent-loop.mjs")).benchAgentLoop({ work, quick, report, time, median, node, cli, putAside, sandboxAvailable: probeSandbox().available });
  }
  if (wanted("sandbox")) {
    settleDisk();
    const r = await benchSandbox(work, quick ? 40 : 80, median);
    if (r === undefined) console.log("skip sandbox: no OS sandbox on this machine (bubblewrap, socat)");
    else {
      report("sandbox: per-phase overhead of the wrap alone (sandboxed minus plain)", r.sandboxedMs - r.plainMs, undefined, { max: 50 });
      console.log(`     (the sandbox library's own wrap of the same command: ${(r.libraryMs - r.plainMs).toFixed(1)}ms over plain; plain ${r.plainMs.toFixed(1)}ms)`);
      // the fence against the floor: a bare bubblewrap launch with the same namespaces, over the same plain spawn
      report("sandbox: per-phase cost of the fence vs a bare bwrap with the same namespaces (over plain)", r.sandboxedMs - r.plainMs, r.bareMs - r.plainMs, 1.3);
      // phaseloop's own work per phase, on top of the fence's own bwrap command line started as is
      report("sandbox: per-phase cost of the fence vs its own bwrap command line started by hand (over plain)", r.sandboxedMs - r.plainMs, r.floorMs - r.plainMs, 1.3);
      console.log(`     (that command line against the bare bwrap: ${(r.floorMs - r.plainMs).toFixed(1)}ms vs ${(r.bareMs - r.plainMs).toFixed(1)}ms = ${((r.floorMs - r.plainMs) / (r.bareMs - r.plainMs)).toFixed(2)}×: the mounts the phase's profile needs)`);
      // a phase that may reach a host starts the relay to the proxy inside: against the same bare bwrap starting the same relay by hand
      report("sandbox: per-phase cost of the fence with the relay to the proxy vs a bare bwrap starting the same relay (over plain)", r.proxiedMs - r.plainMs, r.relayFloorMs - r.plainMs);
      report("sandbox: per-phase cost of the fence with the relay vs its own bwrap command line started by hand (over plain)", r.proxiedMs - r.plainMs, r.proxiedFloorMs - r.plainMs, 1.3);
      console.log(`     (the fence with the relay against the bare bwrap alone: ${(r.proxiedMs - r.plainMs).toFixed(1)}ms vs ${(r.bareMs - r.plainMs).toFixed(1)}ms = ${((r.proxiedMs - r.plainMs) / (r.bareMs - r.plainMs)).toFixed(2)}×)`);
      // through phaseloop: the same pipeline with sandbox required and off, interleaved, in one run
      const dir = join(work, "sandbox-run");
      mkdirSync(join(dir, "src"), { recursive: true });
      const n = quick ? 5 : 20;
      const yaml = join(dir, "p.yaml");
      writeFileSync(yaml, `phaseloop: 1\nname: sbx\nagents:\n  a: { command: [sh, -c, "echo x > src/x.txt"] }\ntools:\n  t: { write: ["src/**"] }\nphases:\n  work: { agent: a, prompt: go, tools: t, next: [{ if: \"iteration >= ${n}\", stop: complete }] }\nstop: { max_iterations: ${n} }\n`);
      const on = [], off = [];
      for (let i = 0; i < (quick ? 2 : 3); i++) {
        off.push(time([node, cli, "run", yaml, "--reporter", "json", "--sandbox", "off"], { cwd: dir }));
        on.push(time([node, cli, "run", yaml, "--reporter", "json", "--sandbox", "required"], { cwd: dir }));
      }
      report(`sandbox: per-phase overhead through phaseloop (${n} phases, required minus off)`, (median(on) - median(off)) / n, undefined, { max: 50 });
      // a loop of short phases (an agent step and a verify step each iteration), as a loop runs
      // by default (both fenced) against the same loop whose verify step says sandbox: off: what
      // fencing run phases adds, not to be twice the loop's cost
      const loopOf = (verifyMode) => `phaseloop: 1\nname: runs\nagents:\n  a: { command: [sh, -c, "echo x >> src/x.txt"] }\ntools:\n  t: { write: ["src/**"] }\nphases:\n  step: { agent: a, prompt: go, tools: t }\n  verify: { run: "true", sandbox: ${verifyMode}, next: [{ if: \"iteration >= ${n}\", stop: complete }] }\nstop: { max_iterations: ${n} }\n`;
      const loop = join(dir, "loop.yaml");
      const loopOff = join(dir, "loop-off.yaml");
      writeFileSync(loop, loopOf("auto"));
      writeFileSync(loopOff, loopOf("off"));
      const fenced = [], bare = [];
      for (let i = 0; i < (quick ? 2 : 3); i++) {
        bare.push(time([node, cli, "run", loopOff, "--reporter", "json"], { cwd: dir }));
        fenced.push(time([node, cli, "run", loop, "--reporter", "json"], { cwd: dir }));
      }
      report(`sandbox: a loop of ${n} iterations (agent step, verify), the verify step fenced (the default) vs not`, median(fenced), median(bare), 2);
    }
  }
  if (wanted("lanes")) {
    settleDisk();
    await (await import("./lanes.mjs")).benchLanes({ work, quick, report, median, node, cli, env });
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const missed = results.filter((r) => !r.ok);
console.log(`\n${results.length - missed.length} of ${results.length} bars met`);
if (check && missed.length) process.exit(1);
