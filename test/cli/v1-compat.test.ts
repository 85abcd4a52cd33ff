// Format 1 keeps its word. The files in test/fixtures/v1 were written against the validator
// of format 1 as first published (main before the cycle and MCP rules, ec72dfd) and
// validated there; they must keep validating, with a located warning for each rule added
// since, and `phaseloop migrate` must write the warnings' fixes.
import { copyFileSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, ROOT, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const dirOfFixtures = join(ROOT, "test/fixtures/v1");
const fixtures = readdirSync(dirOfFixtures).filter((f) => f.endsWith(".yaml"));
const COMPAT = /(?:warning|error) (UNBOUNDED_CYCLE|UNKNOWN_MCP_SERVER)/g;

function copy(): string {
  const dir = tempDir();
  for (const f of readdirSync(dirOfFixtures)) copyFileSync(join(dirOfFixtures, f), join(dir, f));
  return dir;
}

describe("pipelines written for format 1 as first published", () => {
  it("are at least six, and each validates (exit 0)", () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(6);
    const dir = copy();
    for (const f of fixtures) {
      const r = cli(["validate", f], dir);
      expect(r.code, `${f}\n${r.stderr}`).toBe(0);
      // the warnings a fixture expects, at their place
      for (const m of readFileSync(join(dir, f), "utf8").matchAll(/^# expect warning: (\w+) (\d+):(\d+)$/gm)) expect(r.stderr, f).toContain(`${f}:${m[2]}:${m[3]}: warning ${m[1]}`);
    }
  });

  it("warn of each rule added since, with the run's behaviour and the fix", () => {
    const dir = copy();
    const r = cli(["validate", "docs-review.yaml"], dir);
    expect(r.stderr).toMatch(/^docs-review\.yaml:\d+:\d+: warning UNBOUNDED_CYCLE .* the run stops blocked after 10 visits of "review" in one iteration$/m);
    expect(r.stderr).toMatch(/^docs-review\.yaml:11:57: warning UNKNOWN_MCP_SERVER .* so "context7\/\*" allows nothing$/m);
    expect(r.stderr).toContain("`phaseloop migrate FILE --write`");
  });

  it("phaseloop migrate prints the migrated file, which validates without those warnings; --write rewrites it keeping its comments", () => {
    const dir = copy();
    for (const f of fixtures) {
      const before = readFileSync(join(dir, f), "utf8");
      const printed = cli(["migrate", f], dir);
      expect(printed.code, printed.stderr).toBe(0);
      expect(readFileSync(join(dir, f), "utf8"), "without --write the file is left alone").toBe(before);
      const w = cli(["migrate", f, "--write"], dir);
      expect(w.code).toBe(0);
      const after = readFileSync(join(dir, f), "utf8");
      expect(after).toBe(printed.stdout);
      // every comment line of the file is still there
      for (const line of before.split("\n").filter((l) => l.trimStart().startsWith("#"))) expect(after, f).toContain(line);
      const v = cli(["validate", f], dir);
      expect(v.code, v.stderr).toBe(0);
      expect(v.stderr.match(COMPAT) ?? [], f).toEqual([]);
      expect(cli(["migrate", f], dir).stderr).toBe(`${f}: nothing to migrate\n`);
    }
    const fixed = readFileSync(join(dir, "fix-test-loop.yaml"), "utf8");
    expect(fixed).toContain("      - goto: fix\n    max_visits: 10\n    exhausted: { stop: blocked }\n  fix:\n");
    const triage = readFileSync(join(dir, "github-triage.yaml"), "utf8");
    expect(triage).not.toContain("github/list_issues\"]");
    expect(triage).toContain('# phaseloop migrate: removed "github/list_issues", "github/get_issue", "github/add_labels" from mcp');
  });

  it("migrate overrides what a file inherits in the file itself, and leaves the shared base alone", () => {
    const dir = tempDir();
    const base = readFileSync(join(dirOfFixtures, "fix-test-loop.yaml"), "utf8");
    write(dir, { "shared/base.yaml": base, "ours.yaml": "# our loop\nphaseloop: 1\nname: ours\nextends: ./shared/base.yaml\nstop: { max_iterations: 4 }\n" });
    expect(cli(["migrate", "ours.yaml", "--write"], dir).code).toBe(0);
    expect(readFileSync(join(dir, "shared/base.yaml"), "utf8")).toBe(base);
    const ours = readFileSync(join(dir, "ours.yaml"), "utf8");
    expect(ours.startsWith("# our loop\n")).toBe(true);
    const v = cli(["validate", "ours.yaml"], dir);
    expect(v.code, v.stderr).toBe(0);
    expect(v.stderr.match(COMPAT) ?? []).toEqual([]);
  });

  it("a file that declares MCP servers and names another in an allowlist still has an error (a typo, not format 1's way)", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": "phaseloop: 1\nname: typo\nmcp:\n  review: { command: [node, s.mjs] }\nagents:\n  w: { preset: claude }\ntools:\n  t: { read: ['**'], mcp: ['reveiw/comment'] }\nphases:\n  a: { agent: w, tools: t, mcp: [review], prompt: hi, next: [{ stop: complete }] }\nstop: { max_iterations: 1 }\n" });
    const r = cli(["validate", "p.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^p\.yaml:8:\d+: error UNKNOWN_MCP_SERVER .*"reveiw"/m);
    expect(cli(["migrate", "p.yaml"], dir).code).toBe(2);
  });
});
