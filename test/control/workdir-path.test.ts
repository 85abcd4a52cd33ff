import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ControlError, resolveInWorkdir, resolveWorkdir } from "../../src/control/index.ts";
import { tempDir } from "../cli/cli-helpers.ts";

/**
 * A tree to walk: the workdir holds files, a folder, and links that stay in
 * or lead out; beside it, a folder outside with a file of the same names.
 */
function tree() {
  const top = realpathSync(tempDir("phaseloop-fence-"));
  const work = join(top, "work");
  const outside = join(top, "outside");
  for (const d of [work, join(work, "a"), join(work, "a", "b"), outside]) mkdirSync(d, { recursive: true });
  for (const d of [work, join(work, "a"), join(work, "a", "b"), outside]) writeFileSync(join(d, "p.yaml"), "phaseloop: 1\n");
  symlinkSync(join(work, "a"), join(work, "in-link"));
  symlinkSync(outside, join(work, "out-link"));
  symlinkSync(join(outside, "p.yaml"), join(work, "out-file.yaml"));
  symlinkSync(join(work, "a", "p.yaml"), join(work, "a", "b", "up.yaml"));
  return { top, work, outside };
}

const SEGMENTS = ["a", "b", "..", ".", "in-link", "out-link", "outside", "work", "p.yaml", "out-file.yaml", "up.yaml", "", "nope"];

describe("the workdir fence", () => {
  const { top, work } = tree();

  it("accepts a path only when the file it names, links followed, is inside the workdir", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...SEGMENTS), { minLength: 1, maxLength: 7 }), fc.boolean(), (segments, absolute) => {
        const spelled = segments.join("/");
        const path = absolute ? join(top, spelled) : spelled;
        let accepted: string | undefined;
        let refusal: ControlError | undefined;
        try {
          accepted = resolveInWorkdir(work, path, "pipeline");
        } catch (error) {
          if (!(error instanceof ControlError)) throw error;
          refusal = error;
        }
        if (accepted !== undefined) {
          // what is accepted is a real file inside the workdir
          expect(accepted).toBe(realpathSync(accepted));
          expect(accepted === work || accepted.startsWith(work + sep)).toBe(true);
          return;
        }
        // what is refused is outside, missing or not a file, and said so by its code
        expect(["PATH_OUTSIDE_WORKDIR", "PATH_NOT_FOUND", "BAD_ARGUMENT"]).toContain(refusal!.code);
        const lexical = resolve(work, path);
        const inside = relative(work, lexical);
        if (inside.startsWith("..") || resolve(inside) === inside) expect(refusal!.code).toBe("PATH_OUTSIDE_WORKDIR");
      }),
      { numRuns: 400 },
    );
  });

  it("refuses each way out by name", () => {
    for (const path of ["../outside/p.yaml", join(top, "outside/p.yaml"), "out-link/p.yaml", "out-file.yaml", "a/../../outside/p.yaml", "in-link/../../outside/p.yaml"]) {
      expect(() => resolveInWorkdir(work, path, "pipeline"), path).toThrow(expect.objectContaining({ code: "PATH_OUTSIDE_WORKDIR" }));
    }
    for (const path of ["p.yaml", "a/b/up.yaml", "in-link/p.yaml", "a/../p.yaml", join(work, "a/p.yaml")]) expect(resolveInWorkdir(work, path, "pipeline"), path).toMatch(new RegExp(`^${work}/`));
    expect(() => resolveInWorkdir(work, "a", "pipeline")).toThrow(expect.objectContaining({ code: "PATH_NOT_FOUND" }));
    expect(() => resolveInWorkdir(work, "p.yaml\0x", "pipeline")).toThrow(expect.objectContaining({ code: "BAD_ARGUMENT" }));
  });

  it("takes the workdir itself through its links, and refuses one that is not a directory", () => {
    expect(resolveWorkdir(join(top, "work", "in-link"))).toBe(join(work, "a"));
    expect(() => resolveWorkdir(join(work, "p.yaml"))).toThrow(expect.objectContaining({ code: "WORKDIR_INVALID" }));
    expect(() => resolveWorkdir(join(work, "nope"))).toThrow(expect.objectContaining({ code: "WORKDIR_INVALID" }));
  });
});
