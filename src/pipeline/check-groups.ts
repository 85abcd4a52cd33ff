/**
 * Parallel groups: a member is an ordinary agent or run phase that runs only
 * with its one group (no `next` of its own, no `goto` leading to it), and the
 * members' write scopes are disjoint, so each change is one member's.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import type { PipelineDoc } from "./spec.ts";
import { diag, esc, rulesOf, type RuleContext } from "./rule-context.ts";

export function checkGroups(ctx: RuleContext): Diagnostic[] {
  const { doc } = ctx;
  const out: Diagnostic[] = [];
  const names = Object.keys(doc.phases ?? {});
  const groupOf = new Map<string, string>();
  for (const [group, phase] of Object.entries(doc.phases ?? {})) {
    if (!Array.isArray(phase?.parallel)) continue;
    phase.parallel.forEach((member, i) => {
      const ptr = `/phases/${esc(group)}/parallel/${i}`;
      const m = doc.phases[member];
      const problem =
        m === undefined
          ? `unknown phase "${member}"`
          : member === names[0]
            ? `"${member}" is the loop head; it cannot run inside a group`
            : member === group
              ? `group "${group}" cannot be its own member`
              : Array.isArray(m.parallel)
                ? `"${member}" is a parallel group itself; groups do not nest`
                : m.ask !== undefined
                  ? `"${member}" is an ask phase; a question is asked on its own, not beside other phases`
                  : m.pipeline !== undefined
                  ? `"${member}" is a sub-pipeline; it runs as a phase of its own, not beside other phases`
                  : groupOf.has(member)
                    ? `"${member}" is already a member of group "${groupOf.get(member)}"`
                    : undefined;
      if (problem) {
        out.push(diag(ctx, m === undefined ? "UNKNOWN_PHASE" : "GROUP_MEMBER", ptr, problem, { hint: m === undefined ? `phases: ${names.join(", ")}` : "a member is an ordinary agent or run phase of one group" }));
        return;
      }
      groupOf.set(member, group);
      if (m!.next !== undefined) {
        out.push(diag(ctx, "GROUP_MEMBER", `/phases/${esc(member)}/next`, `"${member}" runs in group "${group}", whose rules decide where control goes; a member has no next of its own`, { mode: "key", hint: `move the rules to "${group}" (they can read phases['${member}'])` }));
      }
    });
  }
  // nothing but its group leads to a member
  for (const [name, phase] of Object.entries(doc.phases ?? {})) {
    const base = `/phases/${esc(name)}`;
    const targets: [string, string][] = typeof phase?.next === "string" ? [[phase.next, `${base}/next`]] : rulesOf(phase ?? {}).flatMap((r, i) => (typeof r.goto === "string" ? [[r.goto, `${base}/next/${i}/goto`] as [string, string]] : []));
    if (typeof phase?.exhausted?.goto === "string") targets.push([phase.exhausted.goto, `${base}/exhausted/goto`]);
    for (const [target, ptr] of targets) {
      const group = groupOf.get(target);
      if (group) out.push(diag(ctx, "GROUP_MEMBER", ptr, `"${target}" runs only in group "${group}"; control cannot go to it alone`, { hint: `go to "${group}"` }));
    }
  }
  if (doc.tasks?.final_gate && groupOf.has(doc.tasks.final_gate)) {
    out.push(diag(ctx, "GROUP_MEMBER", "/tasks/final_gate", `"${doc.tasks.final_gate}" runs only in group "${groupOf.get(doc.tasks.final_gate)}"; it cannot be the final gate`));
  }
  out.push(...checkWriteOverlaps(ctx, doc));
  return out;
}

function checkWriteOverlaps(ctx: RuleContext, doc: PipelineDoc): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [group, phase] of Object.entries(doc.phases ?? {})) {
    if (!Array.isArray(phase?.parallel)) continue;
    const writes = phase.parallel.map((m) => {
      const tools = doc.phases[m]?.tools;
      return { member: m, tools, globs: (typeof tools === "string" ? doc.tools?.[tools]?.write : undefined) ?? [] };
    });
    for (let i = 0; i < writes.length; i++) {
      for (let j = i + 1; j < writes.length; j++) {
        const a = writes[i]!;
        const b = writes[j]!;
        const pair = a.globs.flatMap((g) => b.globs.filter((h) => globsOverlap(g, h)).map((h) => [g, h] as const))[0];
        if (!pair) continue;
        const k = phase.parallel.indexOf(b.member);
        out.push(
          diag(ctx, "GROUP_WRITE_OVERLAP", `/phases/${esc(group)}/parallel/${k}`, `members "${a.member}" and "${b.member}" of group "${group}" may write the same files: "${pair[0]}" (tools ${a.tools}) overlaps "${pair[1]}" (tools ${b.tools})`, {
            hint: "give the members disjoint write globs, such as reports/security/** and reports/tests/**",
          }),
        );
      }
    }
  }
  return out;
}

/**
 * Whether some path could match both globs, segment by segment: `**` may
 * stand for any segments, literal segments must be equal, a segment with a
 * wildcard is matched against a literal one; two wildcard segments may meet.
 * A template (`{{ }}`) is taken to match anything.
 */
export function globsOverlap(a: string, b: string): boolean {
  const split = (g: string) => g.replace(/^\.\//, "").replace(/\/+$/, "").split("/").filter((x) => x !== "");
  return segmentsOverlap(split(a), split(b), new Map());
}

function segmentsOverlap(a: string[], b: string[], memo: Map<string, boolean>): boolean {
  const key = `${a.length}:${b.length}`;
  const known = memo.get(key);
  if (known !== undefined) return known;
  let r: boolean;
  if (a.length === 0 && b.length === 0) r = true;
  else if (a[0] === "**") r = segmentsOverlap(a.slice(1), b, memo) || (b.length > 0 && segmentsOverlap(a, b.slice(1), memo));
  else if (b[0] === "**") r = segmentsOverlap(a, b.slice(1), memo) || (a.length > 0 && segmentsOverlap(a.slice(1), b, memo));
  else if (a.length === 0 || b.length === 0) r = false;
  else r = segmentOverlap(a[0]!, b[0]!) && segmentsOverlap(a.slice(1), b.slice(1), memo);
  memo.set(key, r);
  return r;
}

const WILD = /[*?[{]/;

function segmentOverlap(x: string, y: string): boolean {
  const wx = WILD.test(x);
  const wy = WILD.test(y);
  if (!wx && !wy) return x === y;
  if (wx && wy) return true;
  const [pattern, literal] = wx ? [x, y] : [y, x];
  if (pattern.includes("{{") || pattern.includes("[") || pattern.includes("{")) return true;
  const re = new RegExp(`^${pattern.replace(/[.+^$()|\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]")}$`);
  return re.test(literal);
}
