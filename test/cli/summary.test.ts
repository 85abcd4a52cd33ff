import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, git, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const PIPELINE = `phaseloop: 1
name: report
agents:
  scribe: { command: [sh, -c, "cat > /dev/null; echo x > outside.txt; echo $RANDOM > src/in.txt"] }
tools:
  narrow: { read: ["**"], write: ["src/**"], on_violation: warn }
phases:
  write:
    agent: scribe
    tools: narrow
    prompt: "Write the files now."
  flaky:
    run: "if [ -f .flaky ]; then exit 0; fi; touch .flaky; exit 7"
    retry: { max_attempts: 2, on: [exit_nonzero], interval: 10ms }
  check:
    run: "echo checking; exit 1"
    next:
      - if: exit_code == 0
        stop: complete
      - goto: write
stop:
  max_iterations: 2
`;

describe("summary.md", () => {
  it("is a report a person reads: outcome in words, facts, the path taken, a row per iteration, what went wrong", () => {
    const dir = tempDir();
    mkdirSync(join(dir, "src"));
    write(dir, { "p.yaml": PIPELINE });
    git(dir, "init", "-q");
    // the check after the phase (on_violation: warn): in the OS sandbox the stray write would be refused instead
    const r = cli(["run", "p.yaml", "--reporter", "plain", "--sandbox", "off"], dir);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/report: +\.phaseloop\/runs\/\S+\/summary\.md\n$/);
    const md = readFileSync(join(runDir(dir), "summary.md"), "utf8");
    expect(md).toMatch(/^# report · run \S+\n\n\*\*⏹️ stopped without completing\*\*: reached max_iterations \(2\) without completing\n/);
    expect(md).toMatch(/\| Iterations \| 2 of 2 \|/);
    expect(md).toMatch(/\| Phases run \| 7, 3 failed, 1 retry \|/);
    expect(md).toMatch(/\| Policy violations \| 1 \|/);
    // no rows for what did not happen
    expect(md).not.toMatch(/\| (Tokens|Cost|Tasks|Params) \|/);
    expect(md).toContain("```mermaid\nflowchart LR\n");
    expect(md).toContain('p_flaky["flaky ×3, 1 failed"]');
    expect(md).toContain('p_check["check ×2, 2 failed"]');
    expect(md).toContain('p_check --> p_write');
    expect(md).toContain('end_(("stopped"))');
    expect(md).toMatch(/\| 1 \| ✅ write<br>✅ flaky<br>❌ check: exit code 1 \| 3: `\.flaky`, `outside\.txt`, `src\/in\.txt` \| [\d.]+ m?s \|/);
    expect(md).toContain("- Phase `write` changed 1 file outside its write globs (`outside.txt`); allowed with a warning.");
    expect(md).toContain("- Phase `flaky` was retried (attempt 2) after 10 ms: exit code 7.");
    expect(md).toMatch(/## Last failure\n\nPhase `check` in iteration 2: exit code 1\.\n\n```\n[^`]*checking/);
    // every section has something in it, and no table has an empty column
    for (const section of md.split(/^## /m).slice(1)) expect(section.trim().split("\n").length).toBeGreaterThan(2);
  });

  it("shows a long run's first and last 50 iterations, says how many are left out, and still counts every phase run", () => {
    const dir = tempDir();
    write(dir, {
      "long.yaml": `phaseloop: 1
name: long
phases:
  tick:
    run: "true"
    next:
      - if: iteration >= 130
        stop: complete
      - goto: tick
stop: { max_iterations: 130 }
`,
    });
    const r = cli(["run", "long.yaml", "--reporter", "json", "--sandbox", "off"], dir);
    expect(r.code).toBe(0);
    const md = readFileSync(join(runDir(dir), "summary.md"), "utf8");
    expect(md).toMatch(/\| Iterations \| 130 of 130 \|/);
    expect(md).toMatch(/\| Phases run \| 130 \|/);
    expect(md).toContain('p_tick["tick ×130"]');
    const table = md.split("\n").filter((l) => /^\| (\d+|…) \|/.test(l));
    const rows = table.map((l) => l.split(" | ")[0]!.slice(2));
    expect(rows).toEqual([...Array.from({ length: 50 }, (_, i) => String(i + 1)), "…", ...Array.from({ length: 50 }, (_, i) => String(i + 81))]);
    // the row that stands for the rest has as many cells as the others
    expect(table[50]).toMatch(/^\| … \| 30 more iterations, in `iterations\.jsonl` \|/);
    expect(new Set(table.map((l) => l.split(" | ").length)).size).toBe(1);
    // the rows shown keep their times, read from the iterations' events alone
    // nothing in this pipeline reads changed files, so none were measured: the table does not say "none"
    expect(md).toMatch(/\n\| 1 \| ✅ tick \| not measured \| \d+ ms \|\n/);
    expect(md).toMatch(/\n\| 130 \| ✅ tick \| not measured \| \d+ ms \|\n/);
    expect(md).toContain("Changed files were not measured: nothing in this pipeline reads them");
    // and the events and the live lines say so too, not "no files changed"
    const ends = r.stdout.split("\n").filter((l) => l.includes('"iteration.finished"')).map((l) => JSON.parse(l));
    expect(ends[0]).toMatchObject({ iteration: 1, changes: [], measured: false });
    const plain = cli(["run", "long.yaml", "--reporter", "plain", "--sandbox", "off", "--max-iterations", "1"], dir);
    expect(plain.stdout).toMatch(/iteration 1 finished · changes not measured/);
    expect(plain.stdout).not.toContain("no files changed");
  });
});
