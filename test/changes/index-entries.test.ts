import { describe, expect, it } from "vitest";
import { blobId, parseIndexEntries } from "../../src/changes/index-entries.ts";
import { parseRawContent } from "../../src/changes/raw-content.ts";

const OID = "78981922613b2afb6025042ff6bd878ac1994e85";

describe("the index entries the stat watch may judge", () => {
  it("are plain files and symlinks at stage 0 that git looks at as any other", () => {
    const listing = [
      `H 100644 ${OID} 0\ta`,
      `H 100755 ${OID} 0\tx`,
      `H 120000 ${OID} 0\tl`,
      `h 100644 ${OID} 0\tassumed`,
      `S 100644 ${OID} 0\tskipped`,
      `H 160000 ${OID} 0\tsub`,
      `H 100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\tempty`,
      `M 100644 ${OID} 1\tboth`,
      `M 100644 ${OID} 2\tboth`,
      `H 100644 ${OID} 0\t.phaseloop/x`,
      `H 100644 ${OID} 0\tsp ace/\tt`,
      "",
    ].join("\0");
    const { files, entries } = parseIndexEntries(listing);
    expect(files).toEqual(["a", "x", "l", "assumed", "skipped", "sub", "empty", "both", "sp ace/\tt"]);
    expect(Object.fromEntries(entries)).toEqual({
      a: `100644 ${OID}`,
      x: `100755 ${OID}`,
      l: `120000 ${OID}`,
      assumed: null,
      skipped: null,
      sub: null,
      empty: null,
      both: null,
      "sp ace/\tt": `100644 ${OID}`,
    });
  });

  it("are compared by git's blob id, in the repository's hash", () => {
    const a = new TextEncoder().encode("a\n");
    expect(blobId(a, OID)).toBe(OID);
    expect(blobId(new Uint8Array(), "0".repeat(64))).toBe("473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813");
  });
});

describe("whether git compares raw content", () => {
  const listing = (...entries: [string, string][]) => entries.map(([origin, kv]) => `${origin}\0${kv}\0`).join("");

  it("holds with no converting setting, and names the files it was read from", () => {
    const r = parseRawContent(listing(["file:/etc/gitconfig", "user.name\nx"], ["file:.git/config", "core.filemode\ntrue"], ["file:.git/config", "filter.lfs.clean\ngit-lfs clean -- %f"]), "/w");
    expect(r).toEqual({ raw: true, sources: ["/etc/gitconfig", "/w/.git/config"] });
  });

  it("fails under line-end conversion, ignored modes or symlinks, folded case or an attributes file", () => {
    for (const kv of ["core.autocrlf\ninput", "core.autocrlf\ntrue", "core.eol\nlf", "core.filemode\nfalse", "core.symlinks\nfalse", "core.ignorecase\ntrue", "core.attributesfile\n/x"]) {
      expect(parseRawContent(listing(["command line:", kv]), "/w").raw).toBe(false);
    }
    expect(parseRawContent(listing(["command line:", "core.autocrlf\nfalse"], ["command line:", "core.symlinks"]), "/w").raw).toBe(true);
  });
});
