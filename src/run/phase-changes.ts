/**
 * The files a phase changed: the iteration's changes so far, and the write
 * scope of the phase's tool set (files changed outside it are a policy
 * violation, reverted, failed or only noted as the tool set says).
 */
import type { JsonValue } from "../expr/index.ts";
import { parseTemplate, renderTemplate } from "../expr/index.ts";
import type { ErrorClass, ToolSetSpec } from "../pipeline/spec.ts";
import { settleTreeWatch } from "../changes/tree-watch.ts";
import { withoutOwnOutput } from "../changes/own-output.ts";
import { revertScope, type ScopeBaseline } from "../changes/write-scope-baseline.ts";
import type { RunContext } from "./run-context.ts";
import { join } from "node:path";
import { isUnder } from "../sandbox/compile-sandbox.ts";
import { isProtectedPath } from "../sandbox/bwrap-args.ts";

/** A write scope opened before the phase runs: its globs, rendered, and the workdir as it was. */
export interface WriteScope {
  globs: string[];
  baseline: ScopeBaseline;
  toolSet: ToolSetSpec;
}

/**
 * Just before the phase runs: open the write scope of a tool set that has
 * one (its baseline is the workdir now).
 */
export function openWriteScope(toolSet: ToolSetSpec | undefined, context: Record<string, JsonValue>, ctx: RunContext): WriteScope | undefined {
  const globs = toolSet?.write?.map((g) => renderGlob(g, context));
  const baseline = ctx.changes?.startPhase(globs !== undefined);
  if (!toolSet || !globs || !baseline) return undefined;
  return { globs, baseline, toolSet };
}

export interface PhaseChanges {
  /** The iteration's changed files, as phase.finished reports them. */
  changes: string[];
  /** Files changed outside the write scope, when the tool set fails the phase for it. */
  violation?: { error: ErrorClass; message: string };
  /** Files the OS sandbox let the phase write (inside a folder it binds) though no write glob matches them: undone, and refusals. */
  undone?: string[];
}

/** Measure after the phase ran: the iteration's changes, and what left the write scope. */
export async function measurePhaseChanges(phaseName: string, scope: WriteScope | undefined, ctx: RunContext, ignore?: (path: string) => boolean, fenceWritable?: readonly string[], wroteHere?: (path: string) => boolean): Promise<PhaseChanges> {
  const workdir = ctx.info.workdir;
  const tracker = ctx.changes;
  if (!tracker) return { changes: [] };
  await settleTreeWatch(ctx.host, workdir); // the phase's writes, all counted before anything is answered without git
  const allowed = scope && (await scopeMatcher(scope.globs));
  // a file the write globs name is the phase's work, even when git ignores it
  const measured = tracker.endPhase(scope?.baseline, allowed);
  // phaseloop's own output (`> run.out`, `| tee run.log`) changed because it reported, not because the phase worked
  const mine = new Set(withoutOwnOutput(ctx.host, workdir, [...new Set([...measured.changes, ...(measured.scope?.paths ?? []), ...(measured.scope?.internals ?? [])])]));
  const keep = (paths: string[]) => paths.filter((p) => mine.has(p) && !ignore?.(p));
  const keepFresh = (paths: string[]) => {
    const still = new Set(withoutOwnOutput(ctx.host, workdir, paths));
    return paths.filter((p) => still.has(p) && !ignore?.(p));
  };
  let changes = keep(measured.changes);
  const phaseChanges = measured.scope && { paths: keep(measured.scope.paths), internals: keep(measured.scope.internals) };
  if (!scope || !phaseChanges || !allowed) return { changes };
  // the repository's own files (hooks, config, refs, the index) are outside every write scope
  // a protected name (an agent CLI's settings, a hook manager's folder) is outside every write scope, as in the OS sandbox
  let outside = [...phaseChanges.paths.filter((p) => (!allowed(p) || isProtectedPath(p)) && (wroteHere === undefined || wroteHere(p))), ...phaseChanges.internals].sort();
  if (outside.length === 0) return { changes };
  // where the kernel could not tell a glob apart (it binds the folder `docs/*.md` names, and
  // `docs/run.sh` is in it), what the phase wrote outside the globs is undone now, before
  // anything reads it, whatever the tool set's on_violation says: the sandbox's refusal
  let undone: string[] | undefined;
  if (fenceWritable !== undefined) {
    const inBound = outside.filter((p) => fenceWritable.some((dir) => isUnder(join(workdir, p), dir)));
    if (inBound.length > 0) {
      tracker.touched();
      const stuck = revertScope(ctx.host, workdir, scope.baseline, inBound);
      await settleTreeWatch(ctx.host, workdir);
      changes = keepFresh(tracker.remeasure());
      undone = inBound.filter((p) => !stuck.includes(p));
      outside = outside.filter((p) => !undone!.includes(p));
      if (outside.length === 0) return { changes, undone };
    }
  }
  const action = scope.toolSet.on_violation ?? "fail";
  ctx.emit({ type: "policy.violation", phase: phaseName, paths: outside, action });
  if (action === "revert") {
    tracker.touched();
    const stuck = revertScope(ctx.host, workdir, scope.baseline, outside);
    await settleTreeWatch(ctx.host, workdir); // the revert's writes too
    changes = keepFresh(tracker.remeasure());
    return { changes, undone, violation: { error: "policy_violation", message: `changed files outside the write scope (reverted${stuck.length ? `, except ${stuck.join(", ")}` : ""}): ${outside.join(", ")}` } };
  }
  if (action === "fail") return { changes, undone, violation: { error: "policy_violation", message: `changed files outside the write scope: ${outside.join(", ")}` } };
  return { changes, undone };
}

/** Which paths a write scope's globs name. */
async function scopeMatcher(globs: string[]): Promise<(path: string) => boolean> {
  const { default: picomatch } = await import("picomatch");
  // a glob rendered empty (an empty param) allows nothing; picomatch refuses empty patterns
  const some = globs.filter((g) => g !== "");
  return picomatch(some.length ? some : ["\0"], { dot: true });
}

function renderGlob(glob: string, context: Record<string, JsonValue>): string {
  const t = parseTemplate(glob);
  if (!t.template) return glob;
  const r = renderTemplate(t.template, context);
  return r.ok ? r.value.replace(/^\.\//, "") : glob;
}
