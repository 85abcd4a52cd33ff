import { describe, expect, it } from "vitest";
import { absentProtected, bwrapArgs, type BwrapInput, type PathKind } from "../../src/sandbox/bwrap-args.ts";
import { compileSandbox } from "../../src/sandbox/compile-sandbox.ts";

const profile = compileSandbox({ workdir: "/w", home: "/h", tempDir: "/t/p", write: ["src/**"], agent: "claude" });

function input(disk: Record<string, PathKind>, over: Partial<BwrapInput> = {}): BwrapInput {
  return {
    profile,
    cwd: "/w",
    command: ["claude", "-p", "it's"],
    exports: { TMPDIR: "/t/p" },
    proxy: { socket: "/tmp/proxy.sock", username: "srt.aWQ=", token: "s3cret" },
    seccomp: { hex: "abcd", fd: 3, perl: { path: "/usr/bin/perl", prctl: 157 } },
    socat: "socat",
    nestedProtected: [],
    kindOf: (p) => disk[p],
    ...over,
  };
}

/** The pairs of arguments that follow `flag`. */
function mounts(args: string[], flag: string): string[] {
  const out: string[] = [];
  args.forEach((a, i) => {
    if (a === flag) out.push(args[i + (flag === "--ro-bind" || flag === "--bind" ? 2 : 1)]!);
  });
  return out;
}

describe("bwrapArgs", () => {
  const disk: Record<string, PathKind> = {
    "/w/src": "dir",
    "/h/.claude": "dir",
    "/t/p": "dir",
    "/w/.git": "dir",
    "/w/.phaseloop": "dir",
    "/h/.ssh": "dir",
    "/h/.npmrc": "file",
    "/w/src/.vscode": "dir",
  };

  it("binds the write directories that exist, read-only root first", () => {
    const { args } = bwrapArgs(input(disk));
    expect(args.slice(args.indexOf("--ro-bind"), args.indexOf("--ro-bind") + 3)).toEqual(["--ro-bind", "/", "/"]);
    expect(mounts(args, "--bind").sort()).toEqual(["/h/.claude", "/t/p", "/tmp/proxy.sock", "/w/src"]);
  });

  it("binds protected names inside writable directories read-only, and only those that exist", () => {
    const { args } = bwrapArgs(input({ ...disk, "/w": "dir", "/w/.gitmodules": "file" }, { profile: compileSandbox({ workdir: "/w", home: "/h", tempDir: "/t/p", agent: "command" }) }));
    const ro = mounts(args, "--ro-bind");
    expect(ro).toContain("/w/.git");
    expect(ro).toContain("/w/.phaseloop");
    expect(ro).toContain("/w/.gitmodules");
    expect(ro).not.toContain("/w/.bashrc");
  });

  it("masks secrets: a directory by an empty read-only tmpfs, a file by /dev/null", () => {
    const { args } = bwrapArgs(input(disk));
    const at = args.indexOf("/h/.ssh");
    expect(args.slice(at - 1, at + 3)).toEqual(["--tmpfs", "/h/.ssh", "--remount-ro", "/h/.ssh"]);
    const file = args.indexOf("/h/.npmrc");
    expect(args.slice(file - 2, file + 1)).toEqual(["--ro-bind", "/dev/null", "/h/.npmrc"]);
    expect(args).not.toContain("/h/.aws");
  });

  it("keeps the proxy's credential out of the command line and in the environment", () => {
    const { args, env } = bwrapArgs(input(disk));
    expect(args.join(" ")).not.toContain("s3cret");
    expect(env.HTTPS_PROXY).toBe("http://srt.aWQ%3D:s3cret@localhost:3128");
    expect(env.NO_PROXY).toBe("");
  });

  it("with a proxy, perl listens for the relay, starts it, puts the filter on and becomes the command, with the exports set; no user namespace can be made inside", () => {
    const { args } = bwrapArgs(input(disk));
    const tail = args.slice(args.indexOf("--"));
    expect(tail.slice(0, 3)).toEqual(["--", "/usr/bin/perl", "-e"]);
    expect(tail.slice(4, 10)).toEqual(["157", "abcd", "/tmp/proxy.sock", "3128", "/bin/sh", "-c"]);
    expect(tail[10]).toMatch(/^export .*TMPDIR=\/t\/p.*; exec claude -p /);
    expect(tail[3]).toContain("listen(");
    // the relay is forked before the filter goes on; the command is exec'd after it
    expect(tail[3]!.indexOf("fork")).toBeLessThan(tail[3]!.indexOf("syscall($n,22"));
    expect(tail[3]!.indexOf("syscall($n,22")).toBeLessThan(tail[3]!.lastIndexOf("exec{"));
    // the filter perl puts on refuses user namespaces (seccomp-filter.test.ts): bubblewrap's costlier option is not needed
    expect(args).not.toContain("--disable-userns");
    expect(args).not.toContain("--seccomp");
  });

  it("without a proxy (a phase that may reach no host): no socket, no relay, bubblewrap loads the filter from its fd and starts the command, proxy settings cleared", () => {
    const { args, env } = bwrapArgs(input(disk, { proxy: undefined }));
    expect(env).toEqual({});
    expect(args).not.toContain("/tmp/proxy.sock");
    expect(args.join(" ")).not.toMatch(/socat|3128/);
    expect(args.slice(args.indexOf("--seccomp"))).toEqual(["--seccomp", "3", "--", "claude", "-p", "it's"]);
    expect(args).not.toContain("--disable-userns");
    for (const name of ["HTTPS_PROXY", "http_proxy", "ALL_PROXY"]) expect(args.join(" ")).toContain(`--unsetenv ${name}`);
    const set = (name: string) => args[args.findIndex((a, i) => a === "--setenv" && args[i + 1] === name) + 2];
    expect(set("TMPDIR")).toBe("/t/p");
    expect(set("SANDBOX_RUNTIME")).toBe("1");
    // the network namespace is still its own, and the rest of the fence the same
    expect(args).toContain("--unshare-net");
    expect(args.slice(0, args.indexOf("--"))).toEqual(expect.arrayContaining(["--die-with-parent", "--new-session", "--unshare-pid", "--cap-drop"]));
    // a shell command goes to the shell
    expect(bwrapArgs(input(disk, { proxy: undefined, command: "echo hi | wc" })).args.slice(-4)).toEqual(["--", "/bin/sh", "-c", "echo hi | wc"]);
  });

  it("hides ssh's drop-in configuration (it could name another ProxyCommand) only where a proxy is reached: without one nothing is reached at all", () => {
    const withConfig = { ...disk, "/etc/ssh/ssh_config.d": "dir" as const };
    expect(mounts(bwrapArgs(input(withConfig)).args, "--tmpfs")).toContain("/etc/ssh/ssh_config.d");
    expect(mounts(bwrapArgs(input(withConfig, { proxy: undefined })).args, "--tmpfs")).not.toContain("/etc/ssh/ssh_config.d");
    expect(mounts(bwrapArgs(input(disk)).args, "--tmpfs")).not.toContain("/etc/ssh/ssh_config.d");
  });

  it("where there is no perl, the library's helper after the relay, with user namespaces allowed for it and CAP_SETFCAP kept only when asked", () => {
    const helper = (keepSetfcap: boolean) => bwrapArgs(input(disk, { seccomp: { hex: "abcd", fd: 3, helper: { path: "/nm/apply-seccomp", keepSetfcap } } })).args;
    const script = helper(false).at(-1)!;
    expect(script).toMatch(/SRT_ALLOW_NESTED_USERNS=0 exec \/nm\/apply-seccomp \/bin\/sh -c /);
    expect(script.indexOf("UNIX-CONNECT:/tmp/proxy.sock")).toBeLessThan(script.indexOf("/nm/apply-seccomp"));
    expect(helper(false)).not.toContain("--disable-userns");
    expect(helper(false)).not.toContain("--cap-add");
    expect(helper(true).join(" ")).toContain("--cap-drop ALL --cap-add CAP_SETFCAP");
    expect(bwrapArgs(input(disk)).args).not.toContain("--cap-add");
  });

  it("names the protected paths that are absent, to be looked for after the phase", () => {
    const whole = compileSandbox({ workdir: "/w", home: "/h", tempDir: "/t/p", agent: "command" });
    const absent = absentProtected({ profile: whole, cwd: "/w", kindOf: (p) => (p === "/w" ? "dir" : disk[p]) });
    expect(absent).toContain("/w/.mcp.json");
    expect(absent).toContain("/w/.claude");
    expect(absent).toContain("/w/.husky");
    expect(absent).not.toContain("/w/.git");
    // outside any writable directory nothing can make them; in the agent's writable state, its configuration is watched
    const inState = absentProtected({ profile, cwd: "/w", kindOf: (p) => disk[p] });
    expect(inState.filter((p) => !p.startsWith("/h/.claude/"))).toEqual([]);
    expect(inState).toContain("/h/.claude/settings.json");
  });
});
