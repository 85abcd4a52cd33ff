import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, CLI, ensureBuilt, ROOT, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

describe("phaseloop validate", () => {
  it("accepts every recipe", () => {
    const recipes = readdirSync(join(ROOT, "pipelines")).filter((f) => f.endsWith(".yaml")).map((f) => `pipelines/${f}`);
    const r = cli(["validate", ...recipes], ROOT);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  });

  it("prints every problem as file:line:col with a caret frame and hint, exit 2", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": "phaseloop: 1\nname: demo\nphases:\n  review:\n    run: 'true'\n    nxet: review\n    next:\n      - goto: reveiw\nstop: { max_iterations: 2 }\n" });
    const r = cli(["validate", "p.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('p.yaml:6:5: error SCHEMA_UNKNOWN_KEY unknown key "nxet" at phases.review\n6 |     nxet: review\n  |     ^~~~\nhint: did you mean "next"?');
    expect(r.stderr).not.toMatch(/\bat \S+\.js:\d+/);
  });

  it("prints diagnostics as data with --json", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": "phaseloop: 1\nname: Bad Name\nphases: {}\nstop: { max_iterations: 0 }\n" });
    const r = cli(["validate", "--json", "p.yaml"], dir);
    expect(r.code).toBe(2);
    const out = JSON.parse(r.stdout);
    expect(out[0].valid).toBe(false);
    expect(out[0].diagnostics.map((d: { code: string; line: number }) => [d.code, d.line])).toEqual([
      ["SCHEMA_PATTERN", 2],
      ["SCHEMA_RANGE", 3],
      ["SCHEMA_RANGE", 4],
    ]);
  });

  it("reports a missing file without a stack trace", () => {
    const r = cli(["validate", "nope.yaml"], tempDir());
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^nope\.yaml:1:1: error FILE_NOT_FOUND/);
    // met as an empty frame: "1 | " and a lone caret under nothing
    expect(r.stderr).toBe('nope.yaml:1:1: error FILE_NOT_FOUND cannot read "nope.yaml": no such file\n1 error\n');
  });
});

describe("the command line", () => {
  it("answers --help and --version, and rejects unknown commands with a suggestion", () => {
    expect(cli(["--help"], ROOT)).toMatchObject({ code: 0, stdout: expect.stringMatching(/Usage:/) });
    expect(cli(["--version"], ROOT).stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version);
    const r = cli(["valdate", "x"], ROOT);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown command "valdate" \(did you mean "validate"\?\)/);
  });

  it("prints the schema", () => {
    const r = cli(["schema"], ROOT);
    const schema = JSON.parse(r.stdout);
    expect(schema.title).toMatch(/phaseloop pipeline/);
    expect(schema.$id).toBeUndefined(); // no host serves it: the schema is found by its path
  });

  it("does not crash when piped into head", () => {
    const r = spawnSync("sh", ["-c", `"${process.execPath}" "${CLI}" schema | head -c 10 >/dev/null; echo "status:$?"`], { encoding: "utf8", cwd: ROOT });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("status:0");
  });

  it("lists recipes and copies one with init, refusing to overwrite", () => {
    const dir = tempDir();
    expect(cli(["recipes"], dir).stdout).toMatch(/^hailstone\s+/m);
    const a = cli(["init", "hailstone"], dir);
    expect(a.code).toBe(0);
    expect(readFileSync(join(dir, "pipelines/hailstone.yaml"), "utf8")).toContain("name: hailstone");
    expect(readFileSync(join(dir, "pipelines/hailstone/agent.mjs"), "utf8")).toContain("Collatz");
    const b = cli(["init", "hailstone"], dir);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/already exist.*--force/);
    expect(cli(["init", "hailstone", "--force"], dir).code).toBe(0);
    expect(cli(["validate", "pipelines/hailstone.yaml"], dir).code).toBe(0);
    expect(cli(["init", "hailston"], dir).stderr).toMatch(/did you mean "hailstone"/);
  });

  it("copies the starter loop when init names no recipe", () => {
    const dir = tempDir();
    const r = cli(["init", "--dir", "loops"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^created loops\/ralph\.yaml/);
    expect(readFileSync(join(dir, "loops/ralph.yaml"), "utf8")).toContain("name: ralph");
    expect(cli(["validate", "loops/ralph.yaml"], dir).code).toBe(0);
    expect(cli(["init", "a", "b"], dir).code).toBe(2);
  });
});
