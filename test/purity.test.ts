import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/** The pure core: no node:*, no process, no clock, no randomness, no terminal libraries. */
const PURE = ["src/expr", "src/machine", "src/pipeline", "src/pipeline/presets", "src/diagnostics", "src/agents/presets"];
const PURE_FILES = ["src/lanes/schedule-lanes.ts", "src/lanes/format-lanes.ts", "src/runtime/extract-output.ts", "src/runtime/classify-failure.ts", "src/sandbox/compile-sandbox.ts", "src/mcp/mcp-allowlist.ts", "src/mcp/mcp-server.ts", "src/mcp/check-mcp-calls.ts", "src/mcp/mcp-start-check.ts"];

const files = [...PURE.flatMap((d) => readdirSync(d).filter((f) => f.endsWith(".ts")).map((f) => join(d, f))), ...PURE_FILES];

describe("the pure core", () => {
  for (const file of files) {
    it(`${file} touches nothing outside itself`, () => {
      const text = readFileSync(file, "utf8");
      const imports = [...text.matchAll(/^import[^;]*from\s+"([^"]+)"/gm)].map((m) => m[1]!);
      for (const spec of imports) expect(spec, `${file} imports ${spec}`).not.toMatch(/^node:|^listr2|^kleur|^tinyglobby|^picomatch/);
      const code = text.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, "");
      expect(code).not.toMatch(/(?<![\w./-])process\.|\bDate\.now\(|\bnew Date\(|Math\.random\(/);
    });
  }
});
