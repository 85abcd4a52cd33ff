/**
 * The changes of a run's iterations, measured with as few looks at the
 * workdir as the answers allow. Each look after a phase also tells what the
 * workdir is now; while nothing else runs before the next baseline is due (no
 * hook, no task-file write, no other phase), that baseline is derived from
 * the look instead of scanning again (`advanceBaseline`). Anything else that
 * may change files ends the reuse (`touched`), and the next baseline is
 * taken by a scan as before, so a change made between phases is attributed
 * as it always was.
 *
 * A file git ignores is not part of the measure, except where a phase's
 * write globs name it: a phase that changed such a file did the work its
 * tool set gave it (a generated report, a log the recipe keeps out of
 * commits). The tracker claims those files for the iteration, with their
 * state before the phase (by stat, as the write scope saw them), and counts
 * each as changed for as long as its state differs from that one.
 */
import { join } from "node:path";
import type { Host } from "../host/host.ts";
import { statKey } from "./file-snapshot.ts";
import { noteOwnOutput } from "./own-output.ts";
import { advanceBaseline, measureSince, takeBaseline, type Baseline } from "./measure-changes.ts";
import { scopeChangesAndPresent, takeScopeBaseline, type ScopeBaseline, type ScopeChanges, type ScopeReuse } from "./write-scope-baseline.ts";

/** The last look at the workdir, while it still describes the present. */
interface LastLook {
  /** In git: the paths that differ from the iteration baseline's index. */
  tree?: string[];
  /** Outside git: the snapshot. */
  files?: Record<string, string>;
  /** After a write scope's look: its ignored files and repository files, and the baseline kind they belong to. */
  scope?: { kind: Baseline["kind"]; present: Omit<ScopeReuse, "changes"> };
}

export class ChangeTracker {
  private base: Baseline | undefined;
  private last: LastLook | undefined;
  /** Phases started and not yet measured (a group runs several at once). */
  private running = 0;
  private readonly host: Host;
  private readonly workdir: string;
  /** Ignored files a phase's write globs named, claimed for this iteration: each with its state before (ABSENT when it did not exist). */
  private claimed = new Map<string, string>();

  constructor(host: Host, workdir: string, base?: Baseline) {
    this.host = host;
    this.workdir = workdir;
    this.base = base;
    noteOwnOutput(host); // before any phase runs: which processes read phaseloop's output
  }

  /** The current iteration's baseline (undefined before the first, or when a resumed iteration lost it). */
  get baseline(): Baseline | undefined {
    return this.base;
  }

  /** Something other than a measured phase may have changed files since the last look. */
  touched(): void {
    this.last = undefined;
  }

  /** A new iteration: its baseline is the workdir now. */
  beginIteration(): Baseline {
    this.claimed.clear();
    const present = this.present("iteration", true);
    this.base = present ?? takeBaseline(this.host, this.workdir);
    const b = this.base;
    this.last = this.running > 0 ? undefined : b.kind === "snapshot" ? { files: b.files } : { tree: Object.keys(b.overlay ?? {}) };
    return b;
  }

  /** A phase is about to run: its write scope's baseline, if it has a scope. */
  startPhase(scoped: boolean): ScopeBaseline | undefined {
    let scope: ScopeBaseline | undefined;
    if (scoped) {
      // an index brought up to date path by path could hold a file its new .gitignore ignores: scan then
      const changes = this.last?.tree?.length ? undefined : this.present("phase", false);
      const reuse = changes && this.last?.scope?.kind === changes.kind ? this.last.scope.present : {};
      scope = takeScopeBaseline(this.host, this.workdir, changes && { changes, ...reuse });
    }
    this.running++;
    return scope;
  }

  /**
   * A phase ended: the iteration's changes now and, with a write scope, what
   * changed since the phase started. `inScope` tells which paths the phase's
   * write globs name: an ignored file among its changes counts as changed.
   */
  endPhase(scope?: ScopeBaseline, inScope?: (path: string) => boolean): { changes: string[]; scope?: ScopeChanges } {
    this.running = Math.max(0, this.running - 1);
    const base = this.base;
    if (!base) this.last = undefined;
    if (!scope) return { changes: base ? this.look(base) : [] };
    const look = scopeChangesAndPresent(this.host, this.workdir, scope);
    // a scope whose baseline is the iteration's index asked git the same question
    const same = base?.kind === "git" && scope.changes.kind === "git" && scope.changes.index === base.index;
    if (inScope && scope.changes.kind === "git") {
      const ignoredNow = look.present.ignored ?? {};
      for (const p of look.changes.paths) {
        if (this.claimed.has(p) || !inScope(p)) continue;
        const before = scope.ignored[p];
        if (before !== undefined || Object.hasOwn(ignoredNow, p)) this.claimed.set(p, before ?? ABSENT);
      }
    }
    const changes = base ? this.look(base, same ? look.tree : undefined) : [];
    if (this.last) this.last.scope = { kind: scope.changes.kind, present: look.present };
    return { changes, scope: look.changes };
  }

  /** The iteration's changes now, looked at again (after a revert). */
  remeasure(): string[] {
    return this.base ? this.look(this.base) : [];
  }

  private look(base: Baseline, tree?: string[]): string[] {
    const r = measureSince(this.host, this.workdir, base, tree);
    this.last = this.running === 0 ? { tree: r.tree, files: r.files } : undefined;
    if (this.claimed.size === 0) return r.changes;
    const changes = new Set(r.changes);
    for (const [p, before] of this.claimed) if (!inState(this.host, join(this.workdir, p), before)) changes.add(p);
    return [...changes].sort();
  }

  /** A baseline of the workdir now without scanning it, when the last look still describes it. */
  private present(slot: string, overlay: boolean): Baseline | undefined {
    const last = this.last;
    const base = this.base;
    if (!last || !base || this.running > 0) return undefined;
    return advanceBaseline(this.host, this.workdir, base, last, slot, overlay);
  }
}

/** pathState of a path that does not exist. */
const ABSENT = "-";

/** Whether an ignored path is still as the write scope recorded it: by stat (a link also by its target), or ABSENT. */
function inState(host: Host, full: string, before: string): boolean {
  try {
    const st = host.files.lstat(full);
    if (!st) return before === ABSENT;
    return statKey(st) === before || (st.isSymbolicLink() && `link:${host.files.readlink(full)}` === before);
  } catch {
    return before === ABSENT;
  }
}
