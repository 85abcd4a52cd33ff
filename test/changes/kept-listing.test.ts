import { mkdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { forgetListings, snapshotFiles } from "../../src/changes/file-snapshot.ts";
import { readKeptListing } from "../../src/changes/kept-listing.ts";
import { tempDirs } from "./workdir-ops.ts";

const temp = tempDirs("phaseloop-kept-listing-");
const SKIP = new Set([".git", "node_modules", ".phaseloop"]);

describe("a listing's stat cache kept between runs", () => {
  it("is written once a listing learned many files, and a file rewritten since is hashed again however its times were set", { timeout: 60_000 }, async () => {
    const d = temp.make();
    for (let i = 0; i < 1100; i++) {
      const folder = join(d, `d${Math.floor(i / 100)}`);
      if (i % 100 === 0) mkdirSync(folder);
      writeFileSync(join(folder, `f${i}`), `file ${i}\n`);
    }
    await new Promise((r) => setTimeout(r, 1100)); // only entries a second old are kept
    const keep = join(d, ".phaseloop", "measure", "listing");
    const first = snapshotFiles(nodeHost, d, { skip: SKIP, keep });
    expect(Object.keys(first)).toHaveLength(1100);
    expect(readKeptListing(nodeHost.files, keep).size).toBe(1100);

    // another run: the same size and modification time, other content
    const f = join(d, "d3", "f300");
    const was = statSync(f);
    writeFileSync(f, "FILE 300\n");
    utimesSync(f, was.atime, was.mtime);
    forgetListings();
    const again = snapshotFiles(nodeHost, d, { skip: SKIP, keep });
    forgetListings();
    expect(again).toEqual(snapshotFiles(nodeHost, d, { skip: SKIP }));
    expect(again["d3/f300"]).not.toBe(first["d3/f300"]);
  });

  it("reads nothing from a file that is not one", () => {
    const d = temp.make();
    writeFileSync(join(d, "listing"), "something else\0a\0b\0");
    expect(readKeptListing(nodeHost.files, join(d, "listing")).size).toBe(0);
    expect(readKeptListing(nodeHost.files, join(d, "missing")).size).toBe(0);
  });
});
