import { describe, expect, it } from "vitest";
import { checkTree } from "./layering/check-layering.ts";

/** The layers of docs/architecture.md, held to every import of src/ (test/layering/ tests the checker). */
describe("the layering of src/", () => {
  const { problems, layers, edges } = checkTree("src", "docs/architecture.md");

  it("is documented: docs/architecture.md lists the layers from the bottom up", () => {
    expect(layers[0]).toContain("diagnostics");
    expect(layers.at(-1)).toContain("cli.ts");
    expect(edges.length).toBeGreaterThan(500);
  });

  it("has no import that climbs against the documented order, and no import cycle", () => {
    expect(problems, `\n${problems.join("\n")}\n`).toEqual([]);
  });
});
