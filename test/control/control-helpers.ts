import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { ensureBuilt, git, tempDir, write } from "../cli/cli-helpers.ts";
import { ControlError } from "../../src/control/index.ts";

export { ensureBuilt, tempDir, write };

/** What a run started from the control layer gets: no more than a login shell would give an MCP server. */
export const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" };

/** A git repository with a .gitignore, a first commit and the given files (folders that do not exist yet are made). */
export function repo(files: Record<string, string>): string {
  const dir = tempDir("phaseloop-control-");
  write(dir, { ".gitignore": ".phaseloop/\nnode_modules/\n", ...files });
  git(dir, "init", "-q", "-b", "main");
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "first");
  return dir;
}

export function runJson(dir: string, runId: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(dir, ".phaseloop/runs", runId, "run.json"), "utf8")) as Record<string, unknown>;
}

export function eventTypes(dir: string, runId: string): string[] {
  return readFileSync(join(dir, ".phaseloop/runs", runId, "events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { type: string }).type);
}

/** A loop that takes its time: each iteration sleeps, so there is a run to stop. */
export const SLOW = `phaseloop: 1
name: slow-loop
params:
  note: { type: string, default: none }
phases:
  work:
    run: "sleep 0.4; echo {{ params.note }} >> notes.txt"
    next:
      - if: iteration >= 40
        stop: complete
      - goto: work
stop: { max_iterations: 40 }
`;

/** A loop that asks a question, then builds with the answer. */
export const ASK = `phaseloop: 1
name: approve-plan
phases:
  plan:
    run: "echo plan >> plans.txt"
  approve:
    ask: "Approve the plan of iteration {{ iteration }}? Answer approve."
    next:
      - if: answer == 'approve'
        goto: build
      - goto: plan
  build:
    run: [sh, -c, 'printf "%s" "$1" > built.txt', sh, "{{ phases.approve.answer }}"]
    next:
      - stop: complete
        reason: "built after {{ phases.approve.answer }}"
stop: { max_iterations: 3 }
`;

/** Finishes at once. */
export const QUICK = `phaseloop: 1
name: quick
params:
  word: { type: string, default: hello }
  count: { type: integer, default: 1 }
phases:
  say:
    run: "printf '%s %s' {{ params.word }} {{ params.count }} > said.txt"
    next:
      - stop: complete
stop: { max_iterations: 2 }
`;

/** The ControlError a call is refused with; any other outcome fails the test. */
export async function refusal(p: Promise<unknown>): Promise<ControlError> {
  try {
    await p;
  } catch (error) {
    if (error instanceof ControlError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}
