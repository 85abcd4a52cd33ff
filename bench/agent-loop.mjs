// The loop of an agent step and a verify phase in a git repository of 50 files (the
// issue's first row), against a Node script spawning the same two processes in the same
// run. The agent is a command agent (a scripted stand-in: it rewrites one file); outside
// the OS sandbox the loop's overhead has the bar, inside it (the default where the machine
// has one) the figure is the fence's cost per phase on top. Called by run.mjs.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateRepo } from "./measure-changes.mjs";

export function benchAgentLoop({ work, quick, report, time, median, node, cli, sandboxAvailable }) {
  const dir = join(work, "agent-loop");
  mkdirSync(dir);
  generateRepo(dir, 50);
  const iterations = quick ? 100 : 300;
  const step = ["sh", "-c", "echo $PHASELOOP_ITERATION > src/step.txt"];
  const yaml = join(work, "agent-loop.yaml");
  writeFileSync(
    yaml,
    `phaseloop: 1\nname: agent-loop\nagents:\n  scripted: { command: ${JSON.stringify(step)} }\nphases:\n  step:\n    agent: scripted\n    prompt: "step {{ iteration }}"\n  verify:\n    run: ['true']\n    next:\n      - if: iteration >= ${iterations}\n        stop: complete\n      - goto: step\nstop: { max_iterations: ${iterations} }\n`,
  );
  const floorScript = join(work, "agent-loop-floor.mjs");
  writeFileSync(
    floorScript,
    `import { spawn } from "node:child_process";\nconst run = (argv, env) => new Promise((r) => spawn(argv[0], argv.slice(1), { cwd: ${JSON.stringify(dir)}, env, stdio: ["ignore", "pipe", "pipe"] }).on("close", r));\nfor (let i = 1; i <= ${iterations}; i++) { await run(${JSON.stringify(step)}, { ...process.env, PHASELOOP_ITERATION: String(i) }); await run(["true"]); }\n`,
  );
  const loop = (sandbox) => {
    rmSync(join(dir, ".phaseloop"), { recursive: true, force: true });
    return time([node, cli, "run", yaml, "--workdir", dir, "--reporter", "plain", "--sandbox", sandbox]);
  };
  loop("off");
  const floor = [], off = [], on = [];
  for (let r = 0; r < (quick ? 1 : 3); r++) {
    floor.push(time([node, floorScript]));
    off.push(loop("off"));
    if (sandboxAvailable) on.push(loop("required"));
  }
  const perIteration = (xs) => median(xs) / iterations;
  report(`agent loop: per iteration, an agent step and a verify phase, git repo of 50 files, --sandbox off, against a Node script spawning the same processes`, perIteration(off), perIteration(floor), 1.2);
  if (sandboxAvailable) report(`agent loop: the same with the agent step in the OS sandbox (the default where there is one)`, perIteration(on), perIteration(floor));
  rmSync(dir, { recursive: true, force: true });
}
