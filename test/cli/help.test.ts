/**
 * The help a new user reads: one `Usage:` form everywhere, an options table for every
 * command, the options each command takes all documented, and the README's command list
 * in step with the CLI's.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, ROOT, tempDir } from "./cli-helpers.ts";

/** Every command and the options it takes (what its parser accepts). */
const COMMANDS: Record<string, string[]> = {
  run: ["--param", "--workdir", "--max-iterations", "--task", "--parallel", "--into", "--reporter", "--sandbox", "--dry-run", "--json"],
  resume: ["--answer", "--answer-file", "--force", "--workdir", "--reporter", "--sandbox"],
  status: ["--json", "--workdir"],
  runs: ["--json", "--workdir"],
  logs: ["--follow", "--json", "--workdir"],
  tasks: ["--ready", "--json", "--workdir"],
  validate: ["--json", "--print"],
  graph: ["--format", "--expand"],
  migrate: ["--write"],
  init: ["--extends", "--dir", "--force"],
  recipes: ["--json"],
  schema: [],
  ui: ["--workdir", "--port", "--host", "--open"],
  report: ["--html", "--output", "--workdir"],
  mcp: ["--workdir"],
};

/** Commands whose line the README's command list does not have yet (their owners add it). */
const README_PENDING = new Set<string>([]);

describe("help texts", () => {
  let scratch: string;
  beforeAll(() => {
    ensureBuilt();
    scratch = tempDir("phaseloop-help-");
  }, 120_000);

  it("knows the options of every command the CLI lists (a new command gets its line here)", () => {
    const help = cli(["--help"], ROOT).stdout;
    const listed = [...help.slice(help.indexOf("\nCommands:\n")).matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1]!);
    expect(listed.sort()).toEqual(Object.keys(COMMANDS).sort());
  });

  it.each(Object.entries(COMMANDS))("%s --help: Usage:, a description, and an options table with every option it takes", (command, options) => {
    const r = cli([command, "--help"], ROOT);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(new RegExp(`^Usage: phaseloop ${command}\\b`));
    expect(r.stdout).not.toMatch(/^usage:/m);
    const table = r.stdout.slice(r.stdout.indexOf("\nOptions:\n"));
    expect(r.stdout).toContain("\nOptions:\n");
    for (const option of [...options, "--help"]) expect(table, `${command} ${option}`).toMatch(new RegExp(`^ {2}(?:-\\w, )?${option}\\b`, "m"));
    // at most 80 columns, as a terminal shows it
    for (const line of r.stdout.split("\n")) expect(line.length, line).toBeLessThanOrEqual(80);
  });

  it.each(Object.entries(COMMANDS))("the top-level help names %s with its options", (command, options) => {
    const help = cli(["--help"], ROOT).stdout;
    for (const line of help.split("\n")) expect(line.length, line).toBeLessThanOrEqual(80);
    // the synopsis lines wrap: continuation lines joined first
    const inHelp = help.replace(/\n {16}/g, " ").split("\n  phaseloop ").find((l) => l === command || l.startsWith(`${command} `) || l.startsWith(`${command}\n`)) ?? "";
    expect(inHelp, `phaseloop --help has a line for ${command}`).not.toBe("");
    for (const option of options) expect(inHelp, `--help: ${command} ${option}`).toContain(option.replace("--output", "-o"));
  });

  for (const [command, options] of Object.entries(COMMANDS)) {
    const test = README_PENDING.has(command) ? it.fails : it;
    test(`the README's command list names ${command} with its options${README_PENDING.has(command) ? " (not yet: its line is to come)" : ""}`, () => {
      const readme = readFileSync(join(ROOT, "README.md"), "utf8");
      const section = readme.slice(readme.indexOf("## Commands"), readme.indexOf("\n## ", readme.indexOf("## Commands") + 5));
      const inReadme = section.split(/phaseloop (?=\w)/).find((l) => l.startsWith(`${command} `) || l.startsWith(`${command}\n`)) ?? "";
      expect(inReadme, `README: ${command}`).not.toBe("");
      for (const option of options) expect(inReadme, `README: ${command} ${option}`).toContain(option.replace("--output", "-o"));
    });
  }

  it("init's next steps are commands a user can paste in a project that installed phaseloop", () => {
    const r = cli(["init", "hailstone", "--dir", "pipelines"], scratch);
    expect(r.code, r.stderr).toBe(0);
    const next = r.stdout.slice(r.stdout.indexOf("Next:"));
    expect(next.split("\n").slice(1).filter((l) => l.trim())).toEqual(expect.arrayContaining([expect.stringMatching(/^ {2}npx phaseloop validate /), expect.stringMatching(/^ {2}npx phaseloop run .* --dry-run$/)]));
    for (const l of next.split("\n").slice(1).filter((x) => x.trim())) expect(l).toMatch(/^ {2}npx phaseloop /);
  });
});
