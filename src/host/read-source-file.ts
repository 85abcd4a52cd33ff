/**
 * Reading a pipeline or a prompt file the user named: only a regular file,
 * and only up to a size no pipeline needs, so a FIFO, a device such as
 * /dev/zero, a directory or a huge file is an error in words, not a hang.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

/** Larger than any pipeline or prompt a person writes, small enough to validate at once. */
export const SOURCE_FILE_CAP = 2 * 1024 * 1024;

export type SourceRead = string | undefined | { problem: string };

/** The file's text; undefined when it does not exist; `problem` when it cannot be a source. */
export function readSourceFile(path: string, cap = SOURCE_FILE_CAP): SourceRead {
  let fd: number;
  try {
    // non-blocking: opening a FIFO with no writer must not wait
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    if (code === "EISDIR") return { problem: `"${path}" is a directory, not a file` };
    return { problem: `cannot read "${path}": ${(error as Error).message}` };
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) return { problem: `"${path}" is a directory, not a file` };
    if (!st.isFile()) return { problem: `"${path}" is ${st.isFIFO() ? "a FIFO" : st.isSocket() ? "a socket" : "a device"}, not a regular file` };
    if (st.size > cap) return { problem: `"${path}" is ${mb(st.size)}; a pipeline or prompt file may be at most ${mb(cap)}` };
    const buf = Buffer.alloc(Math.min(cap + 1, st.size + 1));
    let n = 0;
    for (;;) {
      if (n === buf.length) return { problem: `"${path}" grew past ${mb(cap)} while it was read` };
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
    }
    return buf.subarray(0, n).toString("utf8");
  } catch (error) {
    return { problem: `cannot read "${path}": ${(error as Error).message}` };
  } finally {
    closeSync(fd);
  }
}

function mb(n: number): string {
  return `${(n / 1024 / 1024).toFixed(n < 1024 * 1024 ? 2 : 1)} MB`;
}
