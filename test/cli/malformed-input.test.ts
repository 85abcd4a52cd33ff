import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { validatePipelineText } from "../../src/pipeline/load-pipeline.ts";
import { cli, ensureBuilt, tempDir } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const pipeline = (extra: string) => `phaseloop: 1\nname: m\n${extra}\nstop: { max_iterations: 1 }\n`;
const withWhen = (when: string) => pipeline(`phases:\n  a:\n    run: "true"\n    when: "${when}"\n    next: [ { stop: complete } ]`);

const SHAPES: [string, (dir: string) => string, string][] = [
  ["a member chain thousands deep", (d) => file(d, withWhen(Array(5000).fill("a").join("."))), "EXPR_SYNTAX"],
  ["an && chain thousands deep", (d) => file(d, withWhen(Array(5000).fill("x").join(" && "))), "EXPR_SYNTAX"],
  ["parentheses thousands deep", (d) => file(d, withWhen("(".repeat(5000) + "x" + ")".repeat(5000))), "EXPR_SYNTAX"],
  ["a recursive alias", (d) => file(d, pipeline(`params: { p: { type: string, default: &a [ *a ] } }\nphases:\n  a:\n    run: "echo {{ params.p }}"`)), "YAML_SYNTAX"],
  ["a 10 MB file", (d) => file(d, pipeline("# " + "x".repeat(10 * 1024 * 1024))), "FILE_UNREADABLE"],
  ["a FIFO", (d) => fifo(join(d, "p.yaml")), "FILE_UNREADABLE"],
  ["a directory", (d) => (mkdirSync(join(d, "p.yaml")), "p.yaml"), "FILE_UNREADABLE"],
  ["/dev/zero as a prompt", (d) => file(d, pipeline(`agents: { w: { command: [cat] } }\nphases:\n  a:\n    agent: w\n    prompt: /dev/zero\n    next: [ { stop: complete } ]`)), "FILE_UNREADABLE"],
  ["a FIFO as a prompt", (d) => (fifo(join(d, "x.md")), file(d, pipeline(`agents: { w: { command: [cat] } }\nphases:\n  a:\n    agent: w\n    prompt: ./x.md\n    next: [ { stop: complete } ]`))), "FILE_UNREADABLE"],
];

function file(dir: string, text: string): string {
  writeFileSync(join(dir, "p.yaml"), text);
  return "p.yaml";
}

function fifo(path: string): string {
  spawnSync("mkfifo", [path]);
  return "p.yaml";
}

describe("malformed input never crashes or hangs", () => {
  it.each(SHAPES)("%s: validate, validate --json and run --dry-run exit 2 with a located error", (_name, make, code) => {
    const dir = tempDir();
    const name = make(dir);
    for (const args of [["validate", name], ["validate", "--json", name], ["run", name, "--dry-run"]]) {
      const r = cli(args, dir);
      expect(r.code, `${args.join(" ")}: ${r.stdout}${r.stderr}`).toBe(2);
      const out = r.stdout + r.stderr;
      expect(out).not.toMatch(/INTERNAL|at .*\.cjs:\d+/);
      expect(out).toContain(code);
    }
    expect(cli(["validate", name], dir).stderr).toMatch(new RegExp(`p\\.yaml:\\d+:\\d+: error ${code}`));
  });
});

describe("expressions of any depth and kind", () => {
  it("property: validation returns diagnostics for nested expressions and never throws", () => {
    const op = fc.constantFrom(" && ", " || ", " == ", " < ", ".", "[0]", "!", "(", "len(");
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 3000 }), (ops, depth) => {
        let e = "x";
        for (let i = 0; i < depth; i++) {
          const o = ops[i % ops.length]!;
          e = o === "!" ? `!${e}` : o === "(" ? `(${e})` : o === "len(" ? `len(${e})` : o === "[0]" ? `${e}[0]` : o === "." ? `${e}.a` : `${e}${o}x`;
        }
        const r = validatePipelineText(withWhen(e), "p.yaml");
        for (const d of r.diagnostics) expect(d.code).not.toBe("INTERNAL");
      }),
      { numRuns: 60 },
    );
  });
});
