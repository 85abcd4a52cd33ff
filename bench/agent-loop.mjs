// The loop of an agent step and a verify phase in a git repository of 50 files (the
// issue's first row), against a Node script spawning the same two processes in the same
// run, per iteration with startup excluded (a run of 10 iterations subtracted from one of
// N, for both). The agent is a command agent (a scripted stand-in: it rewrites one file);
// outside the OS sandbox the loop's overhead has the bar, inside it (the default where the
// machine has one) the figure is the fence's cost per phase on top. Called by run.mjs.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateRepo } from "./measure-changes.mjs";

export function benchAgentLoop({ work, quick, report, time, median, node, cli, putAside, sandboxAvailable }) {
  const dir = join(work, "agent-loop");
  mkdirSync(dir);
  generateRepo(dir, 50);
  const iterations = quick ? 100 : 300;
  const short = 10;
  const step = ["sh", "-c", "echo $PHASELOOP_ITERATION > src/step.txt"];
  const pipeline = (n) => {
    const yaml = join(work, `agent-loop-${n}.yaml`);
    writeFileSync(
      yaml,
      `phaseloop: 1\nname: agent-loop\nagents:\n  scripted: { command: ${JSON.stringify(step)} }\nphases:\n  step:\n    agent: scripted\n    prompt: "step {{ iteration }}"\n  verify:\n    run: ['true']\n    next:\n      - if: iteration >= ${n}\n        stop: complete\n      - goto: step\nstop: { max_iterations: ${n} }\n`,
    );
    return yaml;
  };
  const floorScript = (n) => {
    const file = join(work, `agent-loop-floor-${n}.mjs`);
    writeFileSync(
      file,
      `import { spawn } from "node:child_process";\nconst run = (argv, env) => new Promise((r) => spawn(argv[0], argv.slice(1), { cwd: ${JSON.stringify(dir)}, env, stdio: ["ignore", "pipe", "pipe"] }).on("close", r));\nfor (let i = 1; i <= ${n}; i++) { await run(${JSON.stringify(step)}, { ...process.env, PHASELOOP_ITERATION: String(i) }); await run(["true"]); }\n`,
    );
    return file;
  };
  const long = { yaml: pipeline(iterations), floor: floorScript(iterations) };
  const brief = { yaml: pipeline(short), floor: floorScript(short) };
  // a run's files are put aside (see run.mjs), not removed, before the next run
  const loop = (yaml, sandbox) => {
    putAside(join(dir, ".phaseloop"));
    return time([node, cli, "run", yaml, "--workdir", dir, "--reporter", "plain", "--sandbox", sandbox]);
  };
  loop(brief.yaml, "off");
  const floor = [], off = [], on = [];
  const perIteration = (longMs, shortMs) => (longMs - shortMs) / (iterations - short);
  // rounds of a second or so each, so that the median rides out this kind of machine's drift
  // (a round moves by ±0.3 ms of a 3-4 ms iteration; the medians of five by less)
  const rounds = quick ? 1 : 5;
  for (let r = 0; r < rounds; r++) {
    floor.push(perIteration(time([node, long.floor]), time([node, brief.floor])));
    off.push(perIteration(loop(long.yaml, "off"), loop(brief.yaml, "off")));
  }
  // after the loops outside it: each sandboxed phase makes and removes a temp folder, and
  // inodes freed in the last seconds make every file created nearby slower (see run.mjs)
  if (sandboxAvailable) for (let r = 0; r < Math.min(rounds, 3); r++) on.push(perIteration(loop(long.yaml, "required"), loop(brief.yaml, "required")));
  report(`agent loop: per iteration (startup excluded), an agent step and a verify phase, git repo of 50 files, --sandbox off, against a Node script spawning the same processes`, median(off), median(floor), 1.2);
  if (sandboxAvailable) report(`agent loop: the same with the agent step in the OS sandbox (the default where there is one)`, median(on), median(floor));
  putAside(dir);
}
