/**
 * An agent phase's output file must be a file it can write, or its output is
 * never read: the phase fails (`output_invalid` when required) every time.
 * Two places are out of its reach whatever its prompt says: `.phaseloop/`,
 * phaseloop's own state, which the OS sandbox keeps read-only (all but the
 * run's artifacts folder, `{{ run.artifacts }}`, which every phase may
 * write); and, with a tool set, any path its `write` globs do not name (the
 * CLI refuses the edit, the sandbox the write, the write-scope check the
 * change). A path that is a template beyond `{{ run.artifacts }}` is known
 * only when rendered, and is not judged here.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { globsOverlap } from "./check-groups.ts";
import { diag, esc, phaseEntries, type RuleContext } from "./rule-context.ts";

/** A path in the run's artifacts folder, which every phase may write. */
const IN_ARTIFACTS = /^\{\{\s*run\.artifacts\s*\}\}\//;

export function checkOutputFiles(ctx: RuleContext): Diagnostic[] {
  const { doc } = ctx;
  const out: Diagnostic[] = [];
  for (const [name, phase] of phaseEntries(doc)) {
    if (typeof phase.agent !== "string" || !phase.output || typeof phase.output !== "object") continue;
    const sandbox = phase.sandbox ?? doc.sandbox ?? "auto";
    const toolsName = typeof phase.tools === "string" ? phase.tools : undefined;
    const toolSet = toolsName !== undefined ? doc.tools?.[toolsName] : undefined;
    for (const [key, spec] of Object.entries(phase.output)) {
      if (typeof spec?.file !== "string") continue;
      const file = spec.file.trim().replace(/^(\.\/)+/, "");
      if (IN_ARTIFACTS.test(file)) continue;
      const ptr = `/phases/${esc(name)}/output/${esc(key)}/file`;
      const base = file.slice(file.lastIndexOf("/") + 1) || "output";
      const artifacts = `file: "{{ run.artifacts }}/${base}"`;
      if (file === ".phaseloop" || file.startsWith(".phaseloop/")) {
        if (sandbox === "off") continue;
        out.push(
          diag(ctx, "OUTPUT_FILE_UNWRITABLE", ptr, `phase "${name}" is to write its output "${key}" to ${file}, which the OS sandbox keeps read-only (.phaseloop/ is phaseloop's state): where a sandbox runs, the output is never read`, {
            severity: sandbox === "required" ? "error" : "warning",
            hint: `write it to the run's artifacts folder, which every phase may write: ${artifacts} (the prompt can name it the same way)`,
          }),
        );
        continue;
      }
      if (file.includes("{{") || !toolSet) continue;
      const write = toolSet.write ?? [];
      if (write.some((g) => typeof g === "string" && globsOverlap(g, file))) continue;
      out.push(
        diag(ctx, "OUTPUT_FILE_UNWRITABLE", ptr, `phase "${name}" is to write its output "${key}" to ${file}, which its tool set "${toolsName}" does not let it write${write.length ? ` (write: ${write.join(", ")})` : " (it writes nothing)"}`, {
          hint: `add "${file}" to tools.${toolsName}.write, or use the run's artifacts folder: ${artifacts}`,
        }),
      );
    }
  }
  return out;
}
