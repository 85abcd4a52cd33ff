export { compilePipeline, DEFAULTS } from "./compile-pipeline.ts";
export { transition, initialSnapshot, exitCodeFor, resolveLimit, CAPS, type InitialOptions } from "./transition.ts";
export { buildContext } from "./build-context.ts";
export { resolveParams } from "./resolve-params.ts";
export { describeMachine, formatMermaid, formatDot, machineEdges } from "./format-graph.ts";
export type * from "./types.ts";
export { compileLoaded } from "./compile-loaded.ts";
export { laneBoard, laneTransition, type LaneBoard, type LaneEffect, type LaneEvent } from "./lanes.ts";
