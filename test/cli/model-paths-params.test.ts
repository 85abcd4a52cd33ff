// A phase's model is a template; paths a pipeline names for the workdir are checked by
// validate; a missing param is located at its definition.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, git, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const pipeline = `phaseloop: 1
name: models
params:
  m: { type: string, default: sonnet }
  topic: { type: string, description: what to write about }
  tier: { type: string, default: small }
agents:
  worker:
    command: [sh, -c, 'echo "model=[$PHASELOOP_MODEL]" >> models.txt; cat > /dev/null']
    models: { small: haiku-4 }
tools:
  edit: { read: ["**"], write: ["out/**", models.txt] }
phases:
  first:
    agent: worker
    model: "{{ params.m }}"
    tools: edit
    prompt: "Write about {{ params.topic }}."
  second:
    agent: worker
    model: "{{ params.tier }}"
    tools: edit
    prompt: Again.
    next:
      - if: exit_code == 0
        stop: complete
stop: { max_iterations: 1 }
`;

function project(files: Record<string, string>): string {
  const dir = tempDir();
  write(dir, { ".gitignore": "node_modules/\n", ...files });
  git(dir, "init", "-q");
  return dir;
}

describe("a phase's model", () => {
  it("is rendered as a template, a tier it renders to resolved, and its params count as used", () => {
    const dir = project({ "p.yaml": pipeline });
    const v = cli(["validate", "p.yaml"], dir);
    expect(v.code).toBe(0);
    expect(v.stdout + v.stderr).not.toContain("UNUSED_PARAM");
    const r = cli(["run", "p.yaml", "--reporter", "plain", "--param", "topic=tiers", "--param", "m=opus-x"], dir);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(dir, "models.txt"), "utf8")).toBe("model=[opus-x]\nmodel=[haiku-4]\n");
  });

  it("a template error in it is located in the model", () => {
    const dir = project({ "p.yaml": pipeline.replace('model: "{{ params.m }}"', 'model: "{{ params.mm }}"') });
    const v = cli(["validate", "p.yaml"], dir);
    expect(v.code).toBe(2);
    expect(v.stderr).toMatch(/^p\.yaml:16:\d+: error EXPR_UNKNOWN_PARAM/m);
  });
});

describe("paths for the workdir", () => {
  it("an output file outside the workdir and an absolute or climbing write glob are located validate errors", () => {
    const bad = pipeline
      .replace('write: ["out/**", models.txt]', 'write: ["out/**", "/srv/app/**", "../sibling/**"]')
      .replace('    prompt: Again.\n', "    prompt: Again.\n    output:\n      status: { file: /tmp/status.txt }\n      notes: { file: ../notes.md }\n      fine: { file: 'out/{{ params.m }}.txt' }\n");
    const dir = project({ "p.yaml": bad });
    const v = cli(["validate", "p.yaml"], dir);
    expect(v.code).toBe(2);
    const found = v.stderr.split("\n").filter((l) => l.includes("PATH_OUTSIDE_WORKDIR"));
    expect(found).toEqual([
      expect.stringMatching(/^p\.yaml:12:\d+: error PATH_OUTSIDE_WORKDIR write glob "\/srv\/app\/\*\*" of tool set "edit" is absolute$/),
      expect.stringMatching(/^p\.yaml:12:\d+: error PATH_OUTSIDE_WORKDIR write glob "\.\.\/sibling\/\*\*" .* climbs out/),
      expect.stringMatching(/^p\.yaml:\d+:\d+: error PATH_OUTSIDE_WORKDIR output "status" of phase "second" is read from "\/tmp\/status\.txt", which is absolute$/),
      expect.stringMatching(/^p\.yaml:\d+:\d+: error PATH_OUTSIDE_WORKDIR output "notes" .* climbs out/),
    ]);
  });
});

describe("a missing required param", () => {
  it("is reported at the param's definition, naming the --param flag", () => {
    const dir = project({ "p.yaml": pipeline });
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^p\.yaml:5:10: error PARAM_INVALID param "topic" is required$/m);
    expect(r.stderr).toContain("hint: pass --param topic=VALUE (what to write about)");
  });
});
