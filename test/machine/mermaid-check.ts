/**
 * A structural check of the Mermaid subset `graph` emits: a flowchart header,
 * node declarations with quoted labels, edges with optional quoted labels, and
 * class lines. Unquoted text in a label, a quote inside one, or a `#` that does
 * not start an entity breaks (or silently changes) what Mermaid draws.
 */
export function checkMermaid(text: string): string[] {
  const problems: string[] = [];
  const lines = text.trimEnd().split("\n");
  if (lines[0] !== "flowchart TD") problems.push("the first line must be the flowchart header");
  const id = String.raw`[A-Za-z_][A-Za-z0-9_]*`;
  const label = String.raw`"[^"\n]*"`;
  const node = new RegExp(String.raw`^  ${id}(\[${label}\]|\(\(${label}\)\)|\(\[${label}\]\)|\{\{${label}\}\})$`);
  const edge = new RegExp(String.raw`^  ${id} (-->|-\.->|==>)(\|${label}\|)? ${id}$`);
  const declared = new Set<string>();
  for (const line of lines.slice(1)) {
    for (const [, inner] of line.matchAll(/"([^"]*)"/g)) {
      const stray = inner!.replace(/#(?:\d+|[a-z]+);/g, "");
      if (/[#`]/.test(stray)) problems.push(`a label with an unescaped # or backtick: ${line}`);
    }
    if (node.test(line)) declared.add(line.trim().split(/[[({]/)[0]!);
    else if (edge.test(line)) {
      for (const m of line.trim().replace(/\|"[^"]*"\|/, "").split(/ (?:-\.?->|==>) /)) if (!declared.has(m)) problems.push(`edge to an undeclared node: ${m}`);
    } else if (new RegExp(String.raw`^  subgraph ${id}\[${label}\]$`).test(line) || line === "  end") {
      // a sub-pipeline drawn open (graph --expand)
    } else if (!/^  classDef \w+ [\w:#,-]+$/.test(line) && !/^  class [\w,]+ \w+$/.test(line)) problems.push(`not Mermaid this checker knows: ${line}`);
  }
  return problems;
}

/** The text a quoted Mermaid label shows, entities decoded. */
export function decodeMermaidLabel(quoted: string): string {
  const named: Record<string, string> = { amp: "&", quot: '"', lt: "<", gt: ">" };
  return quoted.slice(1, -1).replace(/#(\d+|[a-z]+);/g, (_, e: string) => (/^\d+$/.test(e) ? String.fromCodePoint(Number(e)) : (named[e] ?? `#${e};`)));
}
