/**
 * The fence around what a control operation may name: the workdir itself,
 * and paths inside it. A path is refused when it leads outside, whether by
 * being absolute elsewhere, by `..`, or by a symbolic link on the way (the
 * real path is checked, not only the spelling).
 */
import process from "node:process";
import type { HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { ControlError } from "./control-error.ts";

/** The workdir as a real, absolute directory path. */
export function resolveWorkdir(workdir: string, cwd = process.cwd(), files: HostFiles = nodeFiles): string {
  const path = resolve(cwd, workdir);
  let real: string;
  try {
    real = files.realpath(path);
  } catch {
    throw new ControlError("WORKDIR_INVALID", `the workdir "${workdir}" does not exist`);
  }
  if (!files.stat(real)?.isDirectory()) throw new ControlError("WORKDIR_INVALID", `the workdir "${workdir}" is not a directory`);
  return real;
}

/** Whether `path` is `root` or lies under it (both absolute and normalised). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * A path given relative to the workdir (or absolute inside it), as the
 * absolute path of an existing file inside the workdir. `what` names the
 * argument in messages ("pipeline").
 */
export function resolveInWorkdir(workdir: string, path: string, what: string, files: HostFiles = nodeFiles): string {
  if (typeof path !== "string" || path === "" || path.includes("\0")) throw new ControlError("BAD_ARGUMENT", `the ${what} path is empty or not a path`);
  const spelled = resolve(workdir, path);
  const outside = (how: string) =>
    new ControlError("PATH_OUTSIDE_WORKDIR", `the ${what} "${path}" is outside the workdir ${workdir}${how}`, { hint: `name a file inside ${workdir}, relative to it (such as pipelines/loop.yaml)` });
  if (!isInside(workdir, spelled)) throw outside("");
  let real: string;
  try {
    real = files.realpath(spelled);
  } catch {
    throw new ControlError("PATH_NOT_FOUND", `the ${what} "${path}" does not exist in the workdir ${workdir}`);
  }
  if (!isInside(workdir, real)) throw outside(` (through a symbolic link to ${real})`);
  if (!files.stat(real)?.isFile()) throw new ControlError("PATH_NOT_FOUND", `the ${what} "${path}" is not a file`);
  return real;
}
