// Parallel lanes: a queue of 8 independent tasks whose agent sleeps 2 s and writes its own
// file, run with --parallel 4 and with --parallel 1 in the same run, each from the same commit
// of a fresh git repository. Wall time of the lanes against the single loop, and phaseloop's
// own CPU (its process, sampled from /proc until it exits; the agents' and git's are theirs):
// per lane against the single loop, and per task in each.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const TASKS = 8;
const PIPELINE = `phaseloop: 1
name: lanes-bench
agents:
  worker:
    command: [sh, -c, 'cat > /dev/null; sleep 2; echo "$TASK" > "out-$TASK.txt"']
tools:
  build: { read: ["**"], write: ["**"] }
tasks:
  source: { glob: "tasks/*.md" }
phases:
  execute:
    agent: worker
    tools: build
    prompt: "Do {{ task.id }}"
    env: { TASK: "{{ task.id }}" }
  verify:
    run: "test -f out-{{ task.id }}.txt"
    next:
      - if: exit_code == 0
        task: done
        goto: execute
      - goto: execute
stop:
  max_iterations: ${TASKS * 2}
`;

function git(dir, ...args) {
  const r = spawnSync("git", ["-c", "user.name=bench", "-c", "user.email=bench@localhost", ...args], { cwd: dir, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}

function makeRepo(dir) {
  mkdirSync(join(dir, "tasks"), { recursive: true });
  writeFileSync(join(dir, "p.yaml"), PIPELINE);
  for (let i = 1; i <= TASKS; i++) writeFileSync(join(dir, "tasks", `t${i}.md`), `# Task ${i}\n`);
  git(dir, "init", "-q", "-b", "main");
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "start");
  return git(dir, "rev-parse", "HEAD");
}

/** The CPU ticks (user + system) of a process so far, from /proc. */
function cpuTicks(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** One run from the start commit: wall ms and phaseloop's own CPU ms (its process alone). */
function runOnce(node, cli, env, dir, start, parallel) {
  git(dir, "reset", "-q", "--hard", start);
  git(dir, "clean", "-qfdx", "-e", ".phaseloop");
  spawnSync("rm", ["-rf", join(dir, ".phaseloop")]);
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const child = spawn(node, [cli, "run", "p.yaml", "--parallel", String(parallel), "--reporter", "plain", "--sandbox", "off"], { cwd: dir, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    let ticks = 0;
    child.stderr.on("data", (d) => (stderr += d));
    // the last sample before the process is gone is (within 20 ms) its CPU
    const timer = setInterval(() => {
      const now = cpuTicks(child.pid);
      if (now !== undefined) ticks = now;
    }, 20);
    child.on("close", (code) => {
      clearInterval(timer);
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      if (code !== 0) return reject(new Error(`--parallel ${parallel} exited ${code}: ${stderr}`));
      for (let i = 1; i <= TASKS; i++) readFileSync(join(dir, `out-t${i}.txt`)); // every task merged
      resolve({ ms, cpuMs: (ticks * 1000) / 100 });
    });
  });
}

export async function benchLanes({ work, quick, report, median, node, cli, env }) {
  const dir = join(work, "lanes");
  mkdirSync(dir);
  const start = makeRepo(dir);
  const one = [];
  const four = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) {
    one.push(await runOnce(node, cli, env, dir, start, 1));
    four.push(await runOnce(node, cli, env, dir, start, 4));
  }
  const wall1 = median(one.map((r) => r.ms));
  const wall4 = median(four.map((r) => r.ms));
  report(`lanes: ${TASKS} tasks of 2 s, --parallel 4 against --parallel 1 (wall)`, wall4, wall1, 0.35);
  // phaseloop's own CPU per lane (the --parallel 4 run's over its 4 lanes) against the single
  // loop's (the --parallel 1 run's), and, without a bar, per task in each
  const cpu1 = median(one.map((r) => r.cpuMs));
  const cpu4 = median(four.map((r) => r.cpuMs));
  report(`lanes: phaseloop's own CPU per lane (--parallel 4 run / 4) against the single loop (--parallel 1 run)`, cpu4 / 4, cpu1, 1.0);
  report(`lanes: phaseloop's own CPU per task, --parallel 4 against --parallel 1`, cpu4 / TASKS, cpu1 / TASKS);
}
