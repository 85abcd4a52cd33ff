// Change measurement (`no_progress`, write scopes) against `git status` and a
// find-and-stat walk, on repositories generated here. Called by run.mjs.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A git repository of `files` files in nested folders (100 per folder), an ignored build folder, one commit. */
export function generateRepo(dir, files, git = true) {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < files; i++) {
    const folder = join(dir, "src", `d${Math.floor(i / 1000)}`, `e${Math.floor(i / 100) % 10}`);
    if (i % 100 === 0) mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, `f${i}.txt`), `file ${i}\n`);
  }
  writeFileSync(join(dir, ".gitignore"), "*.log\nbuild/\n");
  mkdirSync(join(dir, "build"));
  writeFileSync(join(dir, "build", "out.log"), "ignored\n");
  if (!git) return;
  // no automatic gc in the background, which would still be packing objects while they are counted
  const g = (...args) => spawnSync("git", ["-c", "user.email=b@example.com", "-c", "user.name=b", "-c", "gc.auto=0", ...args], { cwd: dir, stdio: "ignore" });
  g("init", "-q");
  g("add", "-A");
  g("commit", "-qm", "generated");
  g("gc", "-q"); // one pack, as a real clone has
}

/**
 * A generated repository (or plain folder) kept under the OS temp dir between
 * bench runs: 100,000 files take minutes to write, add and pack on a small
 * machine. What a loop leaves behind is cleared before use: its step file
 * removed, `.phaseloop/` put aside (see run.mjs).
 */
function cachedRepo(files, git, putAside) {
  const dir = join(tmpdir(), "phaseloop-bench-repos", `${git ? "git" : "plain"}-${files}-v1`);
  const ready = `${dir}.ready`;
  if (!existsSync(ready)) {
    rmSync(dir, { recursive: true, force: true });
    const started = Date.now();
    generateRepo(dir, files, git);
    writeFileSync(ready, `${new Date().toISOString()}\n`);
    console.log(`     (generated ${dir} in ${((Date.now() - started) / 1000).toFixed(1)} s; kept for the next runs)`);
  }
  rmSync(join(dir, "src", "step.txt"), { force: true });
  putAside(join(dir, ".phaseloop"));
  return dir;
}

/** Every object file and pack in the repository, to see that a run adds none. */
function objectFiles(dir) {
  return readdirSync(join(dir, ".git", "objects"), { recursive: true }).sort().join("\n");
}

/**
 * Per iteration, what measuring changes adds to a loop: the same loop run
 * with and without `no_progress` (which measures every iteration), the
 * difference divided by the iterations. The agent step rewrites one file, so
 * every iteration has a change to find.
 */
export function benchMeasure({ work, quick, report, time, median, node, cli, putAside }) {
  const loop = (dir, iterations, measure) => {
    const yaml = join(work, `loop-${measure ? "m" : "p"}-${iterations}.yaml`);
    writeFileSync(
      yaml,
      `phaseloop: 1\nname: loop\nphases:\n  step:\n    run: ['sh', '-c', 'echo $PHASELOOP_ITERATION > src/step.txt']\n  verify:\n    run: ['true']\n    next:\n      - if: iteration >= ${iterations}\n        stop: complete\n      - goto: step\nstop: { max_iterations: ${iterations}${measure ? `, no_progress: ${iterations + 1}` : ""} }\n`,
    );
    putAside(join(dir, ".phaseloop", "runs"));
    // what measuring adds to phaseloop's own work: the phases unfenced, as the floor spawns them
    return time([node, cli, "run", yaml, "--workdir", dir, "--reporter", "plain", "--sandbox", "off"]);
  };

  const sizes = process.argv.includes("--no-100k") ? [10_000] : [10_000, 100_000];
  for (const files of sizes) {
    const dir = cachedRepo(files, true, putAside);
    const iterations = files >= 100_000 ? (quick ? 5 : 10) : quick ? 10 : 30;
    const objectsBefore = objectFiles(dir);
    loop(dir, 2, true); // the first baseline reads every file once
    const status = [], withM = [], without = [];
    for (let r = 0; r < 3; r++) {
      for (let i = 0; i < 5; i++) status.push(time(["git", "status", "--porcelain=v2", "-uall"], { cwd: dir }));
      without.push(loop(dir, iterations, false));
      withM.push(loop(dir, iterations, true));
    }
    const perIteration = Math.max(0, (median(withM) - median(without)) / iterations);
    report(`measure: changes per iteration, git repo of ${files.toLocaleString("en")} files, against git status --porcelain=v2 -uall`, perIteration, median(status), 2);
    report(`measure: objects written into the user's .git/objects (${files.toLocaleString("en")} files)`, objectFiles(dir) === objectsBefore ? 0 : 1, undefined, { max: 0 }, "");
    putAside(join(dir, ".phaseloop"));

    // outside git: the file snapshot against find-and-stat of the same tree
    if (files === 10_000 || !quick) {
      const plain = cachedRepo(files, false, putAside);
      loop(plain, 2, true);
      const find = [], withP = [], withoutP = [];
      for (let r = 0; r < 3; r++) {
        for (let i = 0; i < 5; i++) find.push(time(["sh", "-c", "find . -type f -print0 | xargs -0 stat -c '%s %Y' > /dev/null"], { cwd: plain }));
        withoutP.push(loop(plain, iterations, false));
        withP.push(loop(plain, iterations, true));
      }
      report(`measure: changes per iteration, plain folder of ${files.toLocaleString("en")} files, against find-and-stat`, Math.max(0, (median(withP) - median(withoutP)) / iterations), median(find), 3);
      putAside(join(plain, ".phaseloop"));
    }
  }

  // a small repository: the whole loop against a Node script spawning the same two processes
  const small = join(work, "repo-50");
  generateRepo(small, 50);
  const iterations = quick ? 100 : 300;
  const floorScript = join(work, "floor-50.mjs");
  writeFileSync(
    floorScript,
    `import { spawn } from "node:child_process";\nconst run = (argv) => new Promise((r) => spawn(argv[0], argv.slice(1), { cwd: ${JSON.stringify(small)}, stdio: ["ignore", "pipe", "pipe"] }).on("close", r));\nfor (let i = 0; i < ${iterations}; i++) { await run(["sh", "-c", "echo " + i + " > src/step.txt"]); await run(["true"]); }\n`,
  );
  loop(small, 2, true);
  const floor = [], measured = [];
  for (let r = 0; r < (quick ? 1 : 3); r++) {
    floor.push(time([node, floorScript]));
    measured.push(loop(small, iterations, true));
  }
  report(`measure: per iteration with no_progress, git repo of 50 files, against a Node script spawning the same processes`, median(measured) / iterations, median(floor) / iterations, 3);
}
