import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SourceMap } from "../../src/diagnostics/format-diagnostic.ts";
import { escapeData, escapeProperty, formatAnnotations, formatOutput, workflowCommand } from "../../src/reporters/github-actions.ts";

/** The runner's unescaping of a command's message and property values. */
const unescapeData = (s: string) => s.replace(/%0D/g, "\r").replace(/%0A/g, "\n").replace(/%25/g, "%");
const unescapeProperty = (s: string) => s.replace(/%0D/g, "\r").replace(/%0A/g, "\n").replace(/%3A/g, ":").replace(/%2C/g, ",").replace(/%25/g, "%");

/** $GITHUB_OUTPUT as the runner reads it: `name=value` lines and `name<<DELIM` heredocs. */
function readOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === "") continue;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const body: string[] = [];
      for (i++; lines[i] !== heredoc[2]; i++) {
        if (i >= lines.length) throw new Error(`no closing delimiter for ${heredoc[1]}`);
        body.push(lines[i]!);
      }
      out[heredoc[1]!] = body.join("\n");
    } else {
      const eq = line.indexOf("=");
      out[line.slice(0, eq)] = line.slice(eq + 1);
    }
  }
  return out;
}

describe("GitHub Actions workflow commands", () => {
  it("escape messages and properties so the runner reads back exactly the text", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (message, title) => {
        const line = workflowCommand("error", { title }, message);
        expect(line.endsWith("\n")).toBe(true);
        expect(line.slice(0, -1)).not.toMatch(/[\r\n]/);
        const m = /^::error title=([^,:]*)::(.*)\n$/s.exec(line);
        expect(m).not.toBeNull();
        expect(unescapeProperty(m![1]!)).toBe(title);
        expect(unescapeData(m![2]!)).toBe(message);
      }),
    );
    expect(escapeData("100%\r\ndone")).toBe("100%25%0D%0Adone");
    expect(escapeProperty("a:b,c%")).toBe("a%3Ab%2Cc%25");
    expect(workflowCommand("warning", {}, "plain")).toBe("::warning::plain\n");
  });

  it("writes outputs the runner reads back, on one line or as a heredoc whose delimiter the value does not contain", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("outcome", "run_id", "question"), fc.oneof(fc.string(), fc.constant("x\nPHASELOOP_EOF\ny"), fc.constant("PHASELOOP_EOF_\n")))), (entries) => {
        const values = Object.fromEntries(entries.filter(([, v]) => !v.includes("\r")));
        const text = Object.entries(values).map(([k, v]) => formatOutput(k, v)).join("");
        expect(readOutputs(text)).toEqual(values);
      }),
    );
    expect(formatOutput("outcome", "complete")).toBe("outcome=complete\n");
    expect(formatOutput("q", "a\nb")).toBe("q<<PHASELOOP_EOF\na\nb\nPHASELOOP_EOF\n");
  });

  it("annotates a diagnostic at its file, line and column, relative to the workspace", () => {
    const text = "phaseloop: 1\nname: Bad Name\n";
    const sources = new SourceMap({ "/ws/pipes/p.yaml": text });
    const start = text.indexOf("Bad");
    const line = formatAnnotations([{ code: "SCHEMA_PATTERN", severity: "error", message: 'name "Bad Name": not kebab-case, 100%', hint: "use a-b", file: "/ws/pipes/p.yaml", start, end: start + 8 }], sources, { GITHUB_WORKSPACE: "/ws" }, "/ws");
    expect(line).toBe('::error file=pipes/p.yaml,line=2,col=7,endLine=2,endColumn=15,title=SCHEMA_PATTERN::name "Bad Name": not kebab-case, 100%25 (hint: use a-b)\n');
    const outside = formatAnnotations([{ code: "X" as never, severity: "warning", message: "m", file: "/elsewhere/p.yaml", start: 0, end: 0 }], new SourceMap({ "/elsewhere/p.yaml": "a: 1\n" }), { GITHUB_WORKSPACE: "/ws" }, "/ws");
    expect(outside).toBe("::warning file=/elsewhere/p.yaml,line=1,col=1,endLine=1,endColumn=1,title=X::m\n");
  });
});
