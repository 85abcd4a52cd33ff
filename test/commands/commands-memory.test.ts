/**
 * Commands on a host in memory: what they read and write is the host's, so
 * a command's whole behaviour (exit code, output, the files it leaves) is
 * checked without a disk or a process.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CliIo } from "../../src/commands/cli-io.ts";
import { main as migrate } from "../../src/commands/migrate.ts";
import { main as resume } from "../../src/commands/resume.ts";
import { main as validate } from "../../src/commands/validate.ts";
import { MemoryHost } from "../../src/host/memory-host.ts";

const ROOT = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
const CWD = "/home/user/project";

function io(host: MemoryHost): CliIo & { out: () => string; err: () => string } {
  let out = "";
  let err = "";
  return { stdout: (t) => void (out += t), stderr: (t) => void (err += t), isTTY: false, color: false, env: {}, cwd: CWD, host, out: () => out, err: () => err };
}

const GOOD = `phaseloop: 1
name: good
phases:
  build:
    run: [make]
    next:
      - if: exit_code == 0
        stop: complete
stop:
  max_iterations: 3
`;

/** A cycle without max_visits: format 1 allowed it; migrate writes the bound. */
const UNBOUNDED = readFileSync(join(ROOT, "test/fixtures/v1/skip-loop.yaml"), "utf8");

describe("validate on a memory host", () => {
  it("reads the pipeline from the host: valid is exit 0, a missing file and a broken one are exit 2 with located errors", async () => {
    const host = new MemoryHost({ cwd: CWD, files: { [`${CWD}/good.yaml`]: GOOD, [`${CWD}/bad.yaml`]: "phaseloop: 1\nname: bad\nphases:\n  build:\n    run: 7\nstop:\n  max_iterations: 3\n" } });
    const ok = io(host);
    expect(await validate(["good.yaml"], ok)).toBe(0);
    expect(ok.err()).toBe("");
    const bad = io(host);
    expect(await validate(["bad.yaml", "gone.yaml"], bad)).toBe(2);
    expect(bad.err()).toMatch(/bad\.yaml:5:\d+: error /);
    expect(bad.err()).toContain("gone.yaml");
    // nothing was written
    expect(host.writes).toBe(0);
  });
});

describe("migrate on a memory host", () => {
  it("prints the migrated file without --write, and rewrites it in place with --write, on the host only", async () => {
    const host = new MemoryHost({ cwd: CWD, files: { [`${CWD}/p.yaml`]: UNBOUNDED } });
    const printed = io(host);
    expect(await migrate(["p.yaml"], printed)).toBe(0);
    expect(printed.out()).toContain("max_visits: 10");
    expect(host.files.readText(`${CWD}/p.yaml`)).toBe(UNBOUNDED);
    expect(host.writes).toBe(0);

    const written = io(host);
    expect(await migrate(["p.yaml", "--write"], written)).toBe(0);
    expect(written.err()).toMatch(/p\.yaml: \d+ changes? written/);
    expect(host.files.readText(`${CWD}/p.yaml`)).toBe(printed.out());
    expect(host.writes).toBe(1);

    const again = io(host);
    expect(await validate(["p.yaml"], again)).toBe(0);
    expect(again.err()).not.toContain("UNBOUNDED_CYCLE");
  });
});

describe("resume on a memory host", () => {
  it("reads --answer-file from the host, and says so when there is no run to resume", async () => {
    const host = new MemoryHost({ cwd: CWD, files: { [`${CWD}/answer.txt`]: "yes\n" } });
    const missing = io(host);
    expect(await resume(["--answer-file", "nope.txt"], missing)).toBe(2);
    expect(missing.err()).toContain("nope.txt");
  });
});
