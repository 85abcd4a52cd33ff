/**
 * The `$schema` lines phaseloop writes resolve offline, in the real YAML
 * language server (scripts/install-yaml-server.mjs installs it, pinned,
 * outside the repository): completion and diagnostics on files `init` wrote.
 */
import { readFileSync, symlinkSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, ROOT, tempDir } from "../cli/cli-helpers.ts";
import { haveYamlServer, LspClient } from "./lsp-client.ts";
import { skipped } from "../skip-reason.ts";

if (!haveYamlServer) console.warn("!!! yaml-language-server is not installed (node scripts/install-yaml-server.mjs): the editor tests are SKIPPED");

describe.skipIf(skipped(!haveYamlServer, "yaml-language-server is not installed (node scripts/install-yaml-server.mjs)"))("the $schema line in a real YAML language server", () => {
  let dir: string;
  let lsp: LspClient;
  beforeAll(async () => {
    ensureBuilt();
    dir = tempDir();
    // phaseloop installed in the repository, as npm install puts it
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(ROOT, join(dir, "node_modules", "phaseloop"));
    expect(cli(["init", "ralph"], dir).code).toBe(0);
    expect(cli(["init", "--extends", "execute-review", "--dir", "loops"], dir).code).toBe(0);
    // no schema store: nothing may come from the network
    lsp = new LspClient({ validate: true, completion: true, hover: true, schemaStore: { enable: false } });
    await lsp.start(dir);
  }, 120_000);
  afterAll(async () => {
    await lsp?.stop();
  });

  it("init writes a line that points into the installed package", () => {
    expect(readFileSync(join(dir, "pipelines/ralph.yaml"), "utf8").split("\n")[0]).toBe("# yaml-language-server: $schema=../node_modules/phaseloop/schemas/pipeline.schema.json");
  });

  it("a copied recipe: no diagnostics, completion of the keys it lacks, hover docs", async () => {
    const file = join(dir, "pipelines/ralph.yaml");
    const text = readFileSync(file, "utf8");
    const uri = lsp.open(file, `${text}\n`);
    expect(await lsp.diagnosticsFor(uri)).toEqual([]);
    const lines = text.split("\n").length;
    const labels = await lsp.completion(uri, lines, 0);
    expect(labels).toEqual(expect.arrayContaining(["extends", "include", "hooks", "tasks"]));
    const stopLine = text.split("\n").findIndex((l) => l.startsWith("stop:"));
    const hover = await lsp.hover(uri, stopLine, 1);
    expect(hover).toMatch(/When the loop must stop/);
    expect(hover).toContain("node_modules/phaseloop/schemas/pipeline.schema.json"); // read from the installed package
  }, 60_000);

  it("reports what the schema forbids", async () => {
    const file = join(dir, "pipelines/broken.yaml");
    const text = readFileSync(join(dir, "pipelines/ralph.yaml"), "utf8").replace(/^stop:/m, "stopp:");
    const diagnostics = await lsp.diagnosticsFor(lsp.open(file, text));
    expect(diagnostics.map((d) => d.message).join("\n")).toMatch(/stopp/);
  }, 60_000);

  it("a file that extends a recipe is valid as it stands, and completes agent presets", async () => {
    const file = join(dir, "loops/execute-review.yaml");
    const text = readFileSync(file, "utf8");
    const uri = lsp.open(file, text);
    expect(await lsp.diagnosticsFor(uri)).toEqual([]);
    const withAgent = `${text}agents:\n  worker:\n    preset: \n`;
    const uri2 = lsp.open(join(dir, "loops/other.yaml"), withAgent);
    const lines = withAgent.split("\n");
    const labels = await lsp.completion(uri2, lines.length - 2, "    preset: ".length);
    expect(labels).toEqual(expect.arrayContaining(["claude", "codex"]));
  }, 60_000);

  it("the repository's own recipes point at its schemas/ folder, and resolve", async () => {
    const file = join(ROOT, "pipelines/hailstone.yaml");
    const text = readFileSync(file, "utf8");
    expect(text.split("\n")[0]).toBe("# yaml-language-server: $schema=../schemas/pipeline.schema.json");
    expect(await lsp.diagnosticsFor(lsp.open(file, text))).toEqual([]);
    const bad = await lsp.diagnosticsFor(lsp.open(join(ROOT, "pipelines/not-a-file.yaml"), text.replace("max_iterations:", "max_iteration:")));
    expect(bad.length).toBeGreaterThan(0);
  }, 60_000);
});
