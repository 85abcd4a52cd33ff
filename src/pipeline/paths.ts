/** POSIX-style path helpers for the pure core (no node:path). */

export function dirnameOf(path: string): string {
  const i = path.lastIndexOf("/");
  if (i < 0) return ".";
  if (i === 0) return "/";
  return path.slice(0, i);
}

/** Join and normalise ("a/b", "../c" → "a/c"); an absolute `rel` wins. */
export function joinPath(dir: string, rel: string): string {
  const abs = rel.startsWith("/");
  const parts = (abs ? rel : `${dir}/${rel}`).split("/");
  const out: string[] = [];
  const rooted = abs || dir.startsWith("/");
  for (const p of parts) {
    if (p === "" || p === ".") continue;
    if (p === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!rooted) out.push("..");
    } else out.push(p);
  }
  const joined = out.join("/");
  return rooted ? `/${joined}` : joined || ".";
}

/** Whether a phase's `prompt` names a file rather than holding the text inline. */
export function isPromptPath(prompt: string): boolean {
  if (prompt.includes("\n") || prompt.includes("{{")) return false;
  const t = prompt.trim();
  if (/\s/.test(t)) return false;
  return /\.(md|markdown|txt|prompt)$/i.test(t) || t.includes("/");
}
