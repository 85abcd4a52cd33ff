// Task files are read within bounds: a huge task file or a link out of the workdir is a
// located task-source error, not a read of everything it holds.
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, git, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const pipeline = `phaseloop: 1
name: queue
tasks:
  source: { glob: "tasks/*.md" }
phases:
  work:
    run: ["true"]
    next:
      - if: exit_code == 0
        stop: complete
stop: { max_iterations: 3 }
`;

describe("task files", () => {
  it("a task file larger than 2 MB is refused, naming it", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": pipeline, ".gitignore": "node_modules/\n", "tasks/01-small.md": "# Small\n\nDo it.\n" });
    writeFileSync(join(dir, "tasks/02-huge.md"), `# Huge\n\n${"x".repeat(3 * 1024 * 1024)}\n`);
    git(dir, "init", "-q");
    const r = cli(["tasks", "p.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the task file "tasks/02-huge.md" is larger than 2 MB');
  });

  it("a task file that links out of the workdir is refused", () => {
    const dir = tempDir();
    const outside = tempDir();
    write(outside, { "secret.md": "# Secret\n\nSECRET\n" });
    write(dir, { "p.yaml": pipeline, "tasks/01-small.md": "# Small\n\nDo it.\n" });
    symlinkSync(join(outside, "secret.md"), join(dir, "tasks/02-link.md"));
    const r = cli(["tasks", "p.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('cannot read the task file "tasks/02-link.md"');
    expect(r.stdout + r.stderr).not.toContain("SECRET");
  });
});
