/**
 * The run's artifacts folder as a tool set names it: every phase may write
 * `.phaseloop/runs/RUN_ID/artifacts/**` (run-artifacts.ts adds the glob).
 * Pure, so the presets' allowlist compilers can tell it from the pipeline's own.
 */

/** The folder, relative to the workdir. */
export function artifactsRel(runId: string): string {
  return `.phaseloop/runs/${runId}/artifacts`;
}

/** Whether a write glob is the artifacts folder's (not one of the pipeline's own). */
export function isArtifactsGlob(glob: string): boolean {
  return /^\.phaseloop\/runs\/[^/]+\/artifacts\/\*\*$/.test(glob);
}
