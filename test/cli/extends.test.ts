import { readFileSync, readdirSync, writeFileSync, appendFileSync, existsSync } from "node:fs";
import process from "node:process";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, ensureBuilt, tempDir, write } from "./cli-helpers.ts";
import { skipped } from "../skip-reason.ts";

beforeAll(() => ensureBuilt(), 120_000);

/** A recipe package in node_modules, as a team would publish it. */
function acme(dir: string, version = "1.4.2") {
  write(dir, {
    "node_modules/@acme/loops/package.json": JSON.stringify({ name: "@acme/loops", version, exports: { "./*.yaml": "./pipelines/*.yaml", "./package.json": "./package.json" }, phaseloop: { recipes: "pipelines" } }),
    "node_modules/@acme/loops/pipelines/check-loop.yaml": [
      "phaseloop: 1",
      "name: check-loop",
      "description: Run a check until it passes",
      "include: [./catalogue.yaml]",
      "params:",
      "  marker: { type: string, default: .once }",
      "phases:",
      "  check:",
      '    run: [sh, "{{ pipeline.dir }}/scripts/check.sh", "{{ params.marker }}"]',
      "    next:",
      '      - if: "phases.check.exit_code == 0"',
      "        stop: complete",
      // it signals phaseloop itself, which no fenced process can reach
      "    sandbox: off",
      "stop: { max_iterations: 3 }",
      "",
    ].join("\n"),
    "node_modules/@acme/loops/pipelines/catalogue.yaml": "agents:\n  worker: { command: [sh, -c, 'echo hi'] }\ntools:\n  edit: { read: ['**'], write: ['src/**'] }\n",
    // the first time it runs it waits, marked, for the test to interrupt phaseloop as a closed terminal would
    "node_modules/@acme/loops/pipelines/scripts/check.sh": 'test -f "$1" || { touch "$1"; sleep 30; }\n',
  });
}

describe("extends from a package and from relative paths, on the CLI", () => {
  it("validates, prints the merged pipeline, and locates a problem in the base with the chain", () => {
    const dir = tempDir();
    acme(dir);
    write(dir, { "pipelines/ours.yaml": 'phaseloop: 1\nname: ours\nextends: "@acme/loops/check-loop.yaml"\nparams: { marker: { default: .done } }\nstop: { max_iterations: 5 }\n' });
    const ok = cli(["validate", "pipelines/ours.yaml"], dir);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    const printed = cli(["validate", "--print", "pipelines/ours.yaml"], dir);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain("name: ours");
    expect(printed.stdout).toContain("default: .done");
    expect(printed.stdout).toContain("max_iterations: 5");
    expect(printed.stdout).toContain("{{ pipeline.dir }}/../node_modules/@acme/loops/pipelines/scripts/check.sh");
    expect(printed.stdout).toMatch(/worker:/);

    const base = join(dir, "node_modules/@acme/loops/pipelines/check-loop.yaml");
    writeFileSync(base, readFileSync(base, "utf8").replace("phases.check.exit_code", "phases.chek.exit_code"));
    const bad = cli(["validate", "pipelines/ours.yaml"], dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^node_modules\/@acme\/loops\/pipelines\/check-loop\.yaml:11:21: error EXPR_UNKNOWN_PHASE unknown phase "chek"/m);
    expect(bad.stderr).toContain("note: extended by pipelines/ours.yaml (pipelines/ours.yaml:3:10)");
    const json = JSON.parse(cli(["validate", "--json", "pipelines/ours.yaml"], dir).stdout);
    expect(json[0].diagnostics[0]).toMatchObject({ file: "node_modules/@acme/loops/pipelines/check-loop.yaml", line: 11, related: [{ file: "pipelines/ours.yaml", line: 3, column: 10 }] });
  });

  it("a problem in an included file, two levels down, names both files that led there", () => {
    const dir = tempDir();
    acme(dir);
    appendFileSync(join(dir, "node_modules/@acme/loops/pipelines/catalogue.yaml"), "  lok: { red: ['**'] }\n");
    write(dir, { "ours.yaml": 'phaseloop: 1\nname: ours\nextends: "@acme/loops/check-loop.yaml"\n' });
    const r = cli(["validate", "ours.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^node_modules\/@acme\/loops\/pipelines\/catalogue\.yaml:5:10: error SCHEMA_UNKNOWN_KEY/m);
    expect(r.stderr).toContain("note: included by node_modules/@acme/loops/pipelines/check-loop.yaml (node_modules/@acme/loops/pipelines/check-loop.yaml:4:11)");
    expect(r.stderr).toContain("note: extended by ours.yaml (ours.yaml:3:10)");
  });

  // under Deno's test runner a child process ended by SIGTERM reports no exit code, whatever it did;
  // phaseloop itself saves and exits 130 on SIGTERM under Deno as under Node
  it.skipIf(skipped(process.env.PHASELOOP_TEST_RUNTIME === "deno", "Deno's test runner reports a child ended by SIGTERM with no exit code"))("records every file with its hash and package version; resume refuses when a base changed", async () => {
    const dir = tempDir();
    acme(dir);
    write(dir, { "ours.yaml": 'phaseloop: 1\nname: ours\nextends: "@acme/loops/check-loop.yaml"\n' });
    // from outside: the check runs in the OS sandbox's pid namespace, where phaseloop is not its parent
    const first = cliAsync(["run", "ours.yaml", "--reporter", "plain"], dir);
    while (!existsSync(join(dir, ".once"))) await new Promise((r) => setTimeout(r, 50));
    first.child.kill("SIGTERM");
    expect((await first.done).code).toBe(130);
    const runs = readdirSync(join(dir, ".phaseloop/runs"));
    const info = JSON.parse(readFileSync(join(dir, ".phaseloop/runs", runs[0]!, "run.json"), "utf8"));
    expect(info.files.map((f: { role: string; package?: string; version?: string }) => [f.role, f.package, f.version])).toEqual([
      ["pipeline", undefined, undefined],
      ["extends", "@acme/loops", "1.4.2"],
      ["include", "@acme/loops", "1.4.2"],
    ]);
    expect(info.files[1].sha256).toMatch(/^[0-9a-f]{64}$/);

    appendFileSync(join(dir, "node_modules/@acme/loops/pipelines/catalogue.yaml"), "# a new version\n");
    const refused = cli(["resume"], dir);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/changed since run .* started \(.*catalogue\.yaml \(@acme\/loops 1\.4\.2\) changed\); resume with --force/);
    expect(cli(["resume", "--force", "--reporter", "plain"], dir).code).toBe(0);
  }, 60_000);
});

describe("checks before a run, in the file that wrote the key", () => {
  it("an agent of the base that cannot start is reported in the base", () => {
    const dir = tempDir();
    write(dir, {
      "shared/base.yaml": "phaseloop: 1\nname: base\nagents:\n  worker: { command: [no-such-agent-program-xyz] }\nphases:\n  work:\n    agent: worker\n    prompt: go\n    next: [{ if: \"true\", stop: complete }]\nstop: { max_iterations: 1 }\n",
      "ours.yaml": "phaseloop: 1\nname: ours\nextends: ./shared/base.yaml\n",
    });
    const r = cli(["run", "ours.yaml", "--reporter", "plain"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^shared\/base\.yaml:4:\d+: error AGENT_NOT_FOUND/m);
    expect(r.stderr).toContain("note: extended by ours.yaml (ours.yaml:3:10)");
  });
});

describe("recipes in packages", () => {
  it("phaseloop recipes lists a package's recipes as PACKAGE/RECIPE, after phaseloop's own", () => {
    const dir = tempDir();
    acme(dir);
    const r = cli(["recipes"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ralph\s+/m);
    expect(r.stdout).toMatch(/^@acme\/loops\/check-loop\s+Run a check until it passes$/m);
    expect(r.stdout).not.toMatch(/catalogue/); // an include is not a recipe
    const json = JSON.parse(cli(["recipes", "--json"], dir).stdout);
    expect(json).toContainEqual({ name: "@acme/loops/check-loop", description: "Run a check until it passes", package: "@acme/loops", version: "1.4.2" });
  });

  it("init PACKAGE/RECIPE copies it with the files it names, and a $schema line that resolves", () => {
    const dir = tempDir();
    acme(dir);
    const r = cli(["init", "@acme/loops/check-loop"], dir);
    expect(r.code).toBe(0);
    const text = readFileSync(join(dir, "pipelines/check-loop.yaml"), "utf8");
    expect(text.split("\n")[0]).toMatch(/^# yaml-language-server: \$schema=\S+pipeline\.schema\.json$/);
    expect(readFileSync(join(dir, "pipelines/catalogue.yaml"), "utf8")).toContain("worker");
    expect(cli(["validate", "pipelines/check-loop.yaml"], dir).code).toBe(0);
  });

  it("init --extends writes a short file that extends the recipe by its package path", () => {
    const dir = tempDir();
    acme(dir);
    const r = cli(["init", "--extends", "@acme/loops/check-loop"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^created pipelines\/check-loop\.yaml \(extends @acme\/loops\/check-loop\)/);
    const text = readFileSync(join(dir, "pipelines/check-loop.yaml"), "utf8");
    expect(text).toContain('extends: "@acme/loops/check-loop.yaml"');
    expect(text).toContain("#   marker: { default: … }");
    expect(cli(["validate", "pipelines/check-loop.yaml"], dir).code).toBe(0);
    // phaseloop's own recipes, the same way
    const own = cli(["init", "--extends", "hailstone", "--dir", "loops"], dir);
    expect(own.code).toBe(0);
    expect(cli(["validate", "loops/hailstone.yaml"], dir).code).toBe(0);
    expect(cli(["init", "--extends", "@acme/loops/chek-loop"], dir).stderr).toMatch(/did you mean "@acme\/loops\/check-loop"/);
  });
});
