import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { TOOLS } from "../../src/mcp-server/tools/index.ts";
import { ROOT } from "../cli/cli-helpers.ts";

const doc = readFileSync(join(ROOT, "docs/mcp.md"), "utf8");
const blocks = (lang: string) => [...doc.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);

describe("docs/mcp.md", () => {
  it("lists every tool of the server, in its order", () => {
    const listed = [...doc.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(listed).toEqual(TOOLS.map((t) => t.name));
  });

  it("explains every error code the control layer gives", () => {
    const source = readFileSync(join(ROOT, "src/control/control-error.ts"), "utf8");
    const codes = [...source.matchAll(/\| "([A-Z_]+)"/g)].map((m) => m[1]!);
    expect(codes.length).toBeGreaterThan(10);
    for (const code of [...codes, "INTERNAL"]) expect(doc, code).toContain(`| \`${code}\` |`);
  });

  it("gives each client a configuration that parses and starts `phaseloop mcp`", () => {
    const json = blocks("json").map((b) => JSON.parse(b) as Record<string, Record<string, Record<string, unknown>>>);
    expect(json.map((c) => Object.keys(c).find((k) => k !== "$schema"))).toEqual(["mcpServers", "mcpServers", "mcp"]);
    expect(json[0]!.mcpServers!.phaseloop).toMatchObject({ command: "npx", args: ["phaseloop", "mcp"] });
    expect(json[1]!.mcpServers!.phaseloop).toMatchObject({ command: "npx", args: ["phaseloop", "mcp"] });
    expect(json[2]!.mcp!.phaseloop).toMatchObject({ type: "local", command: ["npx", "phaseloop", "mcp"] });
    const [codex] = blocks("toml").map((b) => parseToml(b) as { mcp_servers: { phaseloop: { command: string; args: string[] } } });
    expect(codex!.mcp_servers.phaseloop).toMatchObject({ command: "npx", args: ["phaseloop", "mcp", "--workdir", "/path/to/repo"] });
  });
});
