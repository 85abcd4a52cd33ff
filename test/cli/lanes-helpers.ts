/** Task queues in git repositories for the tests of parallel lanes. */
import { spawnSync } from "node:child_process";
import { expect } from "vitest";
import { findRunProcesses } from "../../src/host/orphans.ts";
import { git, runDir, tempDir, write } from "./cli-helpers.ts";

/** Each task's agent writes its own file (or, with LINE, one shared line), after its dependencies' files are there. */
export const LANES_PIPELINE = (parallel: number, sleep = "0.2") => `phaseloop: 1
name: lanes
agents:
  worker:
    command: [sh, -c, 'cat > /dev/null; sleep ${sleep}; for d in $DEPS; do test -f "out-$d.txt" || exit 9; done; case "$BODY" in *line:*) printf "%s\\n" "$BODY" | grep "line:" > shared.txt;; *) echo "$TASK" > "out-$TASK.txt";; esac']
tools:
  build: { read: ["**"], write: ["**"] }
tasks:
  source: { glob: "tasks/*.md" }
  parallel: ${parallel}
phases:
  execute:
    agent: worker
    tools: build
    prompt: "Do {{ task.id }}: {{ task.title }}"
    env: { TASK: "{{ task.id }}", DEPS: "{{ join(task.depends_on, ' ') }}", BODY: "{{ task.body }}" }
  verify:
    run: "test -f out-{{ task.id }}.txt || grep -q line: shared.txt"
    next:
      - if: exit_code == 0
        task: done
        goto: execute
      - goto: execute
stop:
  max_iterations: 20
`;

export function laneRepo(tasks: Record<string, { deps?: string[]; line?: string }>, parallel = 3, sleep?: string): string {
  const dir = tempDir("phaseloop-lanes-");
  const files: Record<string, string> = { "p.yaml": LANES_PIPELINE(parallel, sleep), "README.md": "lanes\n" };
  for (const [id, t] of Object.entries(tasks)) files[`tasks/${id}.md`] = `---\nid: ${id}\n${t.deps?.length ? `depends_on: [${t.deps.join(", ")}]\n` : ""}---\n# Task ${id}\n\n${t.line ? `line: ${t.line}` : ""}\n`;
  write(dir, files);
  git(dir, "init", "-q", "-b", "main");
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "start");
  return dir;
}

export function gitOut(dir: string, ...args: string[]): string {
  return spawnSync("git", args, { cwd: dir, encoding: "utf8" }).stdout.trim();
}

/** No worktree but the workdir, nothing for prune to do, a clean status, and no process of the run left. */
export function expectTidy(dir: string): void {
  expect(gitOut(dir, "worktree", "list").split("\n")).toHaveLength(1);
  expect(gitOut(dir, "worktree", "prune", "--dry-run", "-v")).toBe("");
  expect(gitOut(dir, "status", "--porcelain")).toBe("");
  const runId = runDir(dir).split("/").at(-1)!;
  expect(findRunProcesses(runId)).toEqual([]);
}

