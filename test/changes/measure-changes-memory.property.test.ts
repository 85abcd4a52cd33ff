/**
 * The measure outside git, on the memory host, against a model of the tree
 * kept by the test itself: after any writes, removals, mode changes and links,
 * made at any times (a second apart or within the same tick, where the hash
 * cache must not be trusted), the changed paths are exactly those whose state
 * in the model differs from the baseline's.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ChangeTracker } from "../../src/changes/change-tracker.ts";
import { changesSince, takeBaseline } from "../../src/changes/measure-changes.ts";
import { MemoryHost } from "../../src/host/memory-host.ts";

const W = "/work/w";
// nesting, a dotfile, and folders the measure never enters
const PATHS = ["a", "b.txt", ".dot", "d/x", "d/e/y", "node_modules/m.js", ".phaseloop/own", ".git/HEAD"];
const MEASURED = (p: string) => !/^(node_modules|\.phaseloop|\.git)\//.test(p);

type State = { kind: "file"; text: string; exec: boolean } | { kind: "link"; target: string };
type Op =
  | { op: "write"; path: string; text: string }
  | { op: "remove"; path: string }
  | { op: "chmod"; path: string; exec: boolean }
  | { op: "link"; path: string; target: string }
  | { op: "wait"; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("write" as const), path: fc.constantFrom(...PATHS), text: fc.constantFrom("", "x", "y", "xy", "yx") }),
  fc.record({ op: fc.constant("remove" as const), path: fc.constantFrom(...PATHS) }),
  fc.record({ op: fc.constant("chmod" as const), path: fc.constantFrom(...PATHS), exec: fc.boolean() }),
  fc.record({ op: fc.constant("link" as const), path: fc.constantFrom(...PATHS), target: fc.constantFrom("a", "d/x", "nowhere") }),
  fc.record({ op: fc.constant("wait" as const), ms: fc.constantFrom(0, 1, 999, 1000, 2500) }),
);

const dirOf = (p: string) => p.slice(0, Math.max(0, p.lastIndexOf("/")));

/** Apply an operation to the host and to the model alike (one that cannot apply, such as a file where a folder is, does nothing). */
function apply(host: MemoryHost, model: Map<string, State>, o: Op): void {
  if (o.op === "wait") return host.clock.advance(o.ms);
  const full = `${W}/${o.path}`;
  const folderInTheWay = [...model.keys()].some((p) => p.startsWith(`${o.path}/`) || o.path.startsWith(`${p}/`));
  if (folderInTheWay) return;
  const was = model.get(o.path);
  if (o.op === "write") {
    if (was?.kind === "link") return;
    host.files.mkdir(`${W}/${dirOf(o.path)}`);
    host.files.writeText(full, o.text, { mode: was?.exec ? 0o755 : 0o644 });
    model.set(o.path, { kind: "file", text: o.text, exec: was?.exec ?? false });
  } else if (o.op === "remove") {
    if (!was) return;
    host.files.remove(full);
    model.delete(o.path);
  } else if (o.op === "chmod") {
    if (was?.kind !== "file") return;
    host.files.chmod(full, o.exec ? 0o755 : 0o644);
    model.set(o.path, { ...was, exec: o.exec });
  } else {
    if (was) host.files.remove(full);
    host.files.mkdir(`${W}/${dirOf(o.path)}`);
    host.files.symlink(o.target, full);
    model.set(o.path, { kind: "link", target: o.target });
  }
}

function differing(before: Map<string, State>, after: Map<string, State>): string[] {
  const paths = new Set([...before.keys(), ...after.keys()]);
  return [...paths].filter((p) => MEASURED(p) && JSON.stringify(before.get(p)) !== JSON.stringify(after.get(p))).sort();
}

describe("measured changes outside git on the memory host, against a model", () => {
  it("names exactly the paths whose content, executable bit or link target changed, whenever they were written", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 8 }), fc.array(op, { maxLength: 10 }), fc.array(op, { maxLength: 10 }), (setup, first, second) => {
        const host = new MemoryHost();
        host.files.mkdir(W);
        const model = new Map<string, State>();
        for (const o of setup) apply(host, model, o);
        const base = takeBaseline(host, W);
        const atBase = new Map(model);
        for (const o of first) apply(host, model, o);
        expect(changesSince(host, W, base)).toEqual(differing(atBase, model));
        // a later look, with the caches warm, against the same baseline
        for (const o of second) apply(host, model, o);
        expect(changesSince(host, W, base)).toEqual(differing(atBase, model));
      }),
      { numRuns: 300 },
    );
  });

  it("the tracker's iterations each name what changed since their own start", () => {
    fc.assert(
      fc.property(fc.array(fc.array(op, { maxLength: 6 }), { minLength: 1, maxLength: 4 }), (iterations) => {
        const host = new MemoryHost();
        host.files.mkdir(W);
        const model = new Map<string, State>();
        const tracker = new ChangeTracker(host, W);
        for (const ops of iterations) {
          tracker.beginIteration();
          const atStart = new Map(model);
          tracker.startPhase(false);
          for (const o of ops) apply(host, model, o);
          expect(tracker.endPhase().changes).toEqual(differing(atStart, model));
        }
      }),
      { numRuns: 150 },
    );
  });
});
