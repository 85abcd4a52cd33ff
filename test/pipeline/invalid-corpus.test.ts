import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DIAGNOSTIC_CODES } from "../../src/diagnostics/diagnostic.ts";
import { formatDiagnostic, SourceMap, sortDiagnostics } from "../../src/diagnostics/format-diagnostic.ts";
import { LineCounter } from "../../src/diagnostics/line-counter.ts";
import { validatePipelineText } from "../../src/pipeline/load-pipeline.ts";

const root = "test/fixtures/invalid";
const fixtures = readdirSync(root).flatMap((code) =>
  readdirSync(join(root, code))
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => ({ code, file: join(root, code, f) })),
);

describe("the invalid corpus", () => {
  it("has at least 40 fixtures, each in a folder named after a known code", () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(40);
    for (const f of fixtures) expect(DIAGNOSTIC_CODES).toContain(f.code);
  });

  for (const { code, file } of fixtures) {
    it(`${file} reports ${code} at the expected place`, async () => {
      const text = readFileSync(file, "utf8");
      const expectations = [...text.matchAll(/^# expect: (\w+) (\d+):(\d+)$/gm)].map((m) => ({ code: m[1], line: Number(m[2]), col: Number(m[3]) }));
      expect(expectations.length).toBeGreaterThan(0);
      const result = validatePipelineText(text, file, {});
      expect(result.diagnostics.some((d) => d.severity === "error")).toBe(true);
      const lines = new LineCounter(text);
      const found = result.diagnostics.map((d) => ({ code: d.code, ...lines.position(d.start) }));
      for (const e of expectations) expect(found).toContainEqual({ code: e.code, line: e.line, col: e.col });
      // the printed form is pinned once per fixture
      const printed = sortDiagnostics(result.diagnostics)
        .map((d) => formatDiagnostic(d, new SourceMap({ [file]: text })))
        .join("\n\n");
      await expect(printed + "\n").toMatchFileSnapshot(join("..", "..", file.replace(/\.yaml$/, ".out")));
    });
  }
});

describe("valid pipelines", () => {
  for (const file of [...readdirSync("test/fixtures/valid").map((f) => join("test/fixtures/valid", f))]) {
    it(`${file} has no errors`, () => {
      const r = validatePipelineText(readFileSync(file, "utf8"), file, {});
      expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      expect(r.doc).toBeDefined();
    });
  }
});
