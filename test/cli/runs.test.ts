import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, ensureBuilt, ROOT, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const pipeline = (name: string, body: string) => `phaseloop: 1\nname: ${name}\n${body}`;

async function waitFor(check: () => boolean, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("phaseloop runs", () => {
  it("lists the runs newest first with their outcome, iterations, tokens and cost, as a table and as JSON", async () => {
    const dir = tempDir();
    write(dir, {
      "ok.yaml": pipeline("quick", "phases:\n  a:\n    run: 'true'\n    next: [{ if: exit_code == 0, stop: complete }]\nstop: { max_iterations: 2 }\n"),
      "loop.yaml": pipeline("loops", "phases:\n  a:\n    run: 'true'\n    next: [{ if: exit_code == 1, stop: complete }, { goto: a }]\nstop: { max_iterations: 3 }\n"),
      "slow.yaml": pipeline("slow", "phases:\n  a:\n    run: 'sleep 30'\n    next: [{ if: exit_code == 0, stop: complete }]\nstop: { max_iterations: 1 }\n"),
    });
    expect(cli(["runs"], dir)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^no runs in /) });
    expect(cli(["run", "ok.yaml"], dir).code).toBe(0);
    await new Promise((r) => setTimeout(r, 1100)); // run ids sort by the second they start
    expect(cli(["run", "loop.yaml"], dir).code).toBe(3);
    await new Promise((r) => setTimeout(r, 1100));
    const slow = cliAsync(["run", "slow.yaml", "--reporter", "plain"], dir);
    const runs = join(dir, ".phaseloop/runs");
    await waitFor(() => readdirSync(runs).filter((d) => !d.startsWith(".")).length === 3 && slow.output().includes("a started"));

    const listed = JSON.parse(cli(["runs", "--json"], dir).stdout) as Record<string, unknown>[];
    expect(listed.map((r) => [r.pipeline, r.outcome, r.iterations])).toEqual([
      ["slow", "running", 1],
      ["loops", "stopped", 3],
      ["quick", "complete", 1],
    ]);
    expect(listed[1]).toMatchObject({ exit_code: 3, reason: "reached max_iterations (3) without completing", tokens: 0, cost_usd: 0 });
    expect(typeof listed[2]!.duration_ms).toBe("number");
    expect(listed[2]!.dir).toBe(join(runs, listed[2]!.run as string));

    const table = cli(["runs"], dir).stdout.trimEnd().split("\n");
    expect(table[0]).toMatch(/^RUN +PIPELINE +STARTED \(UTC\) +DURATION +OUTCOME +ITERATIONS +TOKENS +COST$/);
    expect(table.slice(1).map((l) => l.split(/ {2,}/)[1])).toEqual(["slow", "loops", "quick"]);
    expect(table[2]).toMatch(/loops +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +\d+\.\ds +stopped +3 +0 +\$0\.00$/);

    slow.child.kill("SIGINT");
    await slow.done;
    expect((JSON.parse(cli(["runs", "--json"], dir).stdout) as Record<string, unknown>[])[0]).toMatchObject({ pipeline: "slow", outcome: "interrupted" });
    expect(cli(["runs", "extra"], dir).code).toBe(2);
  }, 60_000);
});

describe("phaseloop --help", () => {
  const help = cli(["--help"], ROOT).stdout;
  const commands = ["run", "resume", "status", "runs", "logs", "validate", "graph", "init", "recipes", "schema"];

  it.each(commands)("lists every option that %s accepts, as its own --help does", (command) => {
    const source = readFileSync(join(ROOT, "src/commands", `${command}.ts`), "utf8");
    const flags = new Set([...source.matchAll(/"(--[a-z][a-z-]*)"/g)].map((m) => m[1]!).filter((f) => f !== "--help"));
    const own = cli([command, "--help"], ROOT).stdout;
    const line = help.split("\n").find((l) => l.startsWith(`  phaseloop ${command} `) || l.trim() === `phaseloop ${command}`);
    expect(line, `phaseloop ${command} has a usage line`).toBeDefined();
    for (const flag of flags) {
      expect(help, `phaseloop --help lists ${command} ${flag}`).toContain(flag);
      expect(own, `phaseloop ${command} --help lists ${flag}`).toContain(flag);
    }
  });

  it("points only to documents that exist", () => {
    expect(help).not.toMatch(/https?:\/\//);
    for (const [, name] of help.matchAll(/\b([a-z-]+\.md)\b/g)) {
      const path = name === "README.md" ? join(ROOT, name) : join(ROOT, "docs", name!);
      expect(() => readFileSync(path), name).not.toThrow();
    }
  });
});
