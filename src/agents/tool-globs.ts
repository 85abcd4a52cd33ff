/**
 * Globs of the neutral allowlist, rewritten for CLIs whose permission rules
 * match gitignore-style: braces expanded (gitignore has none), a leading
 * `./` dropped, each rule anchored at the workdir's absolute path so that a
 * bare name never matches at any depth. Pure.
 */

/** `src/{a,b}.ts` → `src/a.ts`, `src/b.ts` (nested braces too; `{1..3}` numeric ranges). At most 256 results. */
export function expandBraces(glob: string, limit = 256): string[] {
  const open = findBrace(glob);
  if (!open) return [glob];
  const { start, end, parts } = open;
  const head = glob.slice(0, start);
  const tail = glob.slice(end + 1);
  const out: string[] = [];
  for (const p of parts) {
    for (const e of expandBraces(head + p + tail, limit)) {
      if (out.length >= limit) return out;
      out.push(e);
    }
  }
  return out;
}

function findBrace(glob: string): { start: number; end: number; parts: string[] } | undefined {
  for (let i = 0; i < glob.length; i++) {
    if (glob[i] === "\\") {
      i++;
      continue;
    }
    if (glob[i] !== "{") continue;
    let depth = 0;
    const cuts: number[] = [];
    for (let j = i; j < glob.length; j++) {
      const c = glob[j];
      if (c === "\\") {
        j++;
        continue;
      }
      if (c === "{") depth++;
      else if (c === "}") {
        depth--;
        if (depth === 0) {
          const body = glob.slice(i + 1, j);
          const range = /^(-?\d+)\.\.(-?\d+)$/.exec(body);
          if (range) {
            const a = Number(range[1]);
            const b = Number(range[2]);
            const parts: string[] = [];
            for (let n = a; a <= b ? n <= b : n >= b; n += a <= b ? 1 : -1) if (parts.length < 256) parts.push(String(n));
            return { start: i, end: j, parts };
          }
          if (cuts.length === 0) break; // `{x}` is literal
          const bounds = [i, ...cuts, j];
          return { start: i, end: j, parts: bounds.slice(0, -1).map((b, k) => glob.slice(b + 1, bounds[k + 1])) };
        }
      } else if (c === "," && depth === 1) cuts.push(j);
    }
  }
  return undefined;
}

/** A workdir-relative glob as a path pattern anchored at the absolute workdir. */
export function anchorGlob(workdir: string, glob: string): string {
  let g = glob.trim();
  while (g.startsWith("./")) g = g.slice(2);
  if (g === "." || g === "") g = "**";
  g = g.replace(/^\/+/, "");
  const root = workdir.replace(/\/+$/, "").replace(/([*?[\]\\])/g, "\\$1");
  return `${root}/${g}`;
}
