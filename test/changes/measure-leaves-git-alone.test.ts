import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, git, tempDir, write } from "../cli/cli-helpers.ts";

const dirs: string[] = [];
beforeAll(() => ensureBuilt());
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Every file under .git/objects, loose or packed. */
function objects(dir: string): string[] {
  return (readdirSync(join(dir, ".git", "objects"), { recursive: true }) as string[]).sort();
}

describe("a run in a git repository", () => {
  it("writes no object into the user's .git, leaves its index byte for byte, and keeps .phaseloop out of git status", () => {
    const d = tempDir("phaseloop-git-alone-");
    dirs.push(d);
    git(d, "init", "-q");
    write(d, {
      ".gitignore": "*.log\n",
      "src/a.txt": "a\n",
      "agent.sh": "#!/bin/sh\nn=$(cat src/n 2>/dev/null || echo 0); echo $((n+1)) > src/n; echo x >> src/a.txt; echo y > out.log\n",
    });
    git(d, "add", "-A");
    git(d, "commit", "-qm", "init");
    writeFileSync(join(d, "src", "a.txt"), "staged\n");
    git(d, "add", "src/a.txt");
    writeFileSync(
      join(d, "loop.yaml"),
      "phaseloop: 1\nname: loop\nagents:\n  a: { command: ['./agent.sh'] }\ntools:\n  src: { write: ['src/**', '*.log'], on_violation: revert }\nphases:\n  work:\n    agent: a\n    tools: src\n    prompt: go\n  check:\n    run: 'true'\n    next:\n      - if: exit_code != 0\n        stop: complete\nstop: { max_iterations: 4, no_progress: 2 }\n",
    );
    const objectsBefore = objects(d);
    const indexBefore = readFileSync(join(d, ".git", "index"));
    const statusBefore = spawnSync("git", ["status", "--porcelain"], { cwd: d, encoding: "utf8" }).stdout;
    const r = cli(["run", "loop.yaml", "--reporter", "plain"], d);
    expect(r.code, r.stdout + r.stderr).toBe(3); // max iterations, with progress every time
    expect(readFileSync(join(d, "src", "n"), "utf8")).toBe("4\n");
    expect(objects(d)).toEqual(objectsBefore);
    expect(readFileSync(join(d, ".git", "index"))).toEqual(indexBefore);
    expect(readFileSync(join(d, ".phaseloop", ".gitignore"), "utf8")).toBe("*\n");
    // the run's own files never show; only what the agent changed does
    const status = spawnSync("git", ["status", "--porcelain", "-uall"], { cwd: d, encoding: "utf8" }).stdout;
    expect(status.split("\n").filter((l) => l.includes(".phaseloop"))).toEqual([]);
    expect(status).not.toBe(statusBefore);
    expect(readFileSync(join(d, ".gitignore"), "utf8")).toBe("*.log\n");
  });
});
