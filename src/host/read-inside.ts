/**
 * A file's content for file() in a prompt: a path inside the workdir (the same
 * escape rules as the built-in tools: no `..` out, no absolute path elsewhere,
 * no link that leads out), a regular file, at most `maxBytes` read; a longer
 * file is cut on a character boundary with a note saying so.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { resolveInside } from "./resolve-inside.ts";

export function readInside(workdir: string, path: string, maxBytes: number): string {
  if (path.trim() === "") throw new Error("no path given");
  if (path.includes("\0")) throw new Error("the path holds a NUL byte");
  const abs = resolveInside(workdir, path);
  if (!abs) throw new Error("the path leads outside the workdir");
  let fd: number;
  try {
    fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK); // the resolved path: a link swapped in, or a FIFO, is refused
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(code === "ENOENT" || code === "ENOTDIR" ? "no such file in the workdir" : `cannot be read (${code ?? (error as Error).message})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error("not a regular file");
    const buf = Buffer.alloc(Math.min(maxBytes + 1, Math.max(stat.size + 1, 1)));
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, got);
      if (n === 0) break;
      got += n;
    }
    if (got <= maxBytes) return buf.subarray(0, got).toString("utf8");
    let end = maxBytes;
    while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--; // not inside a UTF-8 character
    return `${buf.subarray(0, end).toString("utf8")}\n… (${path} cut at ${maxBytes} bytes of ${Math.max(stat.size, got)})`;
  } finally {
    closeSync(fd);
  }
}
