/**
 * Commands on a host in memory: what they read and write is the host's, so
 * a command's whole behaviour (exit code, output, the files it leaves) is
 * checked without a disk or a process.
 */
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import type { CliIo } from "../../src/commands/cli-io.ts";
import { main as migrate } from "../../src/commands/migrate.ts";
import { main as resume } from "../../src/commands/resume.ts";
import { main as validate } from "../../src/commands/validate.ts";
import { main as initMain } from "../../src/commands/init.ts";
import { main as logsMain } from "../../src/commands/logs.ts";
import { main as reportMain } from "../../src/commands/report.ts";
import { main as runsMain } from "../../src/commands/runs.ts";
import { main as statusMain } from "../../src/commands/status.ts";
import { START } from "../../src/host/fake-clock.ts";
import { MemoryHost } from "../../src/host/memory-host.ts";
import { sampleRun } from "../reporters/synthetic-run.ts";

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

/** A finished run's folder, as the runner leaves it. */
function withRun(files: Record<string, string> = {}): MemoryHost {
  const runDir = `${CWD}/.phaseloop/runs/20261101-120400-ab12`;
  const events = sampleRun().map((e) => `${JSON.stringify(e)}\n`).join("");
  return new MemoryHost({ cwd: CWD, files: { [`${runDir}/events.jsonl`]: events, ...files } });
}

describe("status, runs and logs on a memory host", () => {
  it("read the run folder the host holds, and write nothing", async () => {
    const host = withRun();
    const status = io(host);
    expect(await statusMain(["--json"], status)).toBe(0);
    expect(JSON.parse(status.out())).toMatchObject({ run: "20261101-120400-ab12", state: "complete", iteration: 2, tokens: 2000 });
    const runs = io(host);
    expect(await runsMain(["--json"], runs)).toBe(0);
    expect(JSON.parse(runs.out())).toMatchObject([{ run: "20261101-120400-ab12", outcome: "complete", exit_code: 0 }]);
    const logs = io(host);
    expect(await logsMain(["--json"], logs)).toBe(0);
    expect(logs.out().split("\n").filter(Boolean).map((l) => JSON.parse(l).type)).toEqual(sampleRun().map((e) => e.type));
    const unknown = io(host);
    expect(await statusMain(["nope"], unknown)).toBe(2);
    expect(unknown.err()).toContain('unknown run "nope"');
    expect(host.writes).toBe(0);
  });

  it("logs --follow polls by the host's clock and ends at the run's end", async () => {
    const host = withRun();
    const follow = io(host);
    expect(await logsMain(["--follow"], follow, { pollMs: 10_000 })).toBe(0);
    expect(follow.out()).toContain("complete");
    expect(host.clock.now()).toBe(START);
  });

  it("report says the page is not built when the host has no page, without writing", async () => {
    const host = withRun();
    const report = io(host);
    expect(await reportMain(["--html", "-o", "-"], report)).toBe(1);
    expect(report.err()).toContain("the page is not built");
    expect(host.writes).toBe(0);
  });
});

describe("init on a memory host", () => {
  /** phaseloop's own package as the host sees it: its package.json and the ralph recipe with its folder. */
  function withPackage(): MemoryHost {
    const files: Record<string, string> = {};
    for (const rel of ["package.json", "pipelines/ralph.yaml", "pipelines/ralph/work.md"]) files[join(ROOT, rel)] = readFileSync(join(ROOT, rel), "utf8");
    return new MemoryHost({ cwd: CWD, files });
  }

  it("copies the starter recipe and its folder onto the host, with the schema line, and refuses to overwrite without --force", async () => {
    const host = withPackage();
    const first = io(host);
    expect(await initMain([], first)).toBe(0);
    expect(first.out()).toContain("created pipelines/ralph.yaml and pipelines/ralph/");
    const copied = host.files.readText(`${CWD}/pipelines/ralph.yaml`);
    expect(copied.split("\n")[0]).toBe(`# yaml-language-server: $schema=${relative(`${CWD}/pipelines`, join(ROOT, "schemas/pipeline.schema.json"))}`);
    expect(copied.split("\n").slice(1).join("\n")).toBe(readFileSync(join(ROOT, "pipelines/ralph.yaml"), "utf8").split("\n").slice(1).join("\n"));
    expect(host.files.readText(`${CWD}/pipelines/ralph/work.md`)).toBe(readFileSync(join(ROOT, "pipelines/ralph/work.md"), "utf8"));
    const again = io(host);
    expect(await initMain([], again)).toBe(2);
    expect(again.err()).toContain("already exist; use --force to overwrite");
    const forced = io(host);
    expect(await initMain(["--force", "--dir", "loops"], forced)).toBe(0);
    expect(host.files.exists(`${CWD}/loops/ralph/work.md`)).toBe(true);
  });

  it("writes the short file of --extends", async () => {
    const host = withPackage();
    const out = io(host);
    expect(await initMain(["--extends", "ralph", "--dir", "mine"], out)).toBe(0);
    const text = host.files.readText(`${CWD}/mine/ralph.yaml`);
    expect(text).toContain("name: ralph\nextends: ");
    expect(text).toContain("#   agent: { default: … }");
    expect(host.files.exists(`${CWD}/mine/ralph`)).toBe(false);
  });
});
