/**
 * The changes of a run's iterations, measured with as few looks at the
 * workdir as the answers allow. Each look after a phase also tells what the
 * workdir is now; while nothing else runs before the next baseline is due (no
 * hook, no task-file write, no other phase), that baseline is derived from
 * the look instead of scanning again (`advanceBaseline`). Anything else that
 * may change files ends the reuse (`touched`), and the next baseline is
 * taken by a scan as before, so a change made between phases is attributed
 * as it always was.
 */
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
  private readonly workdir: string;

  constructor(workdir: string, base?: Baseline) {
    this.workdir = workdir;
    this.base = base;
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
    const present = this.present("iteration", true);
    this.base = present ?? takeBaseline(this.workdir);
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
      scope = takeScopeBaseline(this.workdir, changes && { changes, ...reuse });
    }
    this.running++;
    return scope;
  }

  /**
   * A phase ended: the iteration's changes now and, with a write scope, what
   * changed since the phase started.
   */
  endPhase(scope?: ScopeBaseline): { changes: string[]; scope?: ScopeChanges } {
    this.running = Math.max(0, this.running - 1);
    const base = this.base;
    if (!base) this.last = undefined;
    if (!scope) return { changes: base ? this.look(base) : [] };
    const look = scopeChangesAndPresent(this.workdir, scope);
    // a scope whose baseline is the iteration's index asked git the same question
    const same = base?.kind === "git" && scope.changes.kind === "git" && scope.changes.index === base.index;
    const changes = base ? this.look(base, same ? look.tree : undefined) : [];
    if (this.last) this.last.scope = { kind: scope.changes.kind, present: look.present };
    return { changes, scope: look.changes };
  }

  /** The iteration's changes now, looked at again (after a revert). */
  remeasure(): string[] {
    return this.base ? this.look(this.base) : [];
  }

  private look(base: Baseline, tree?: string[]): string[] {
    const r = measureSince(this.workdir, base, tree);
    this.last = this.running === 0 ? { tree: r.tree, files: r.files } : undefined;
    return r.changes;
  }

  /** A baseline of the workdir now without scanning it, when the last look still describes it. */
  private present(slot: string, overlay: boolean): Baseline | undefined {
    const last = this.last;
    const base = this.base;
    if (!last || !base || this.running > 0) return undefined;
    return advanceBaseline(this.workdir, base, last, slot, overlay);
  }
}
