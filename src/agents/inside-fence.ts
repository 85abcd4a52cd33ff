/**
 * A CLI's command as it runs inside phaseloop's OS sandbox: a preset whose CLI's own sandbox
 * cannot start inside the fence says how its argv changes there (its `sandbox.insideFence`,
 * codex's `-s danger-full-access`); every other command runs as it is.
 */
import { basename } from "node:path";
import { PRESETS } from "../pipeline/presets/registry.ts";

export function insideFence(command: string[] | string): string[] | string {
  if (typeof command === "string") return command;
  const name = basename(command[0] ?? "");
  const rewrite = PRESETS.find((p) => p.program === name)?.sandbox.insideFence;
  return rewrite ? rewrite(command) : command;
}
