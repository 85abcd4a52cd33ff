/**
 * The seccomp filter bubblewrap loads (`--seccomp FD`), or perl after the relay: a Unix
 * socket is refused with EPERM, io_uring is refused, no user namespace can be made, another
 * architecture's system calls end the process, everything else passes. Checked by running the program as the kernel does.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ARCHES, CLONE_NEWUSER, filterBytes, filterHex, filterProgram, runFilter, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS } from "../../src/sandbox/seccomp-filter.ts";

const EPERM = SECCOMP_RET_ERRNO | 1;
const ENOSYS = SECCOMP_RET_ERRNO | 38;

describe.each(Object.keys(ARCHES))("the filter for %s", (arch) => {
  const a = ARCHES[arch]!;
  const program = filterProgram(arch)!;
  const call = (nr: number, args: number[] = [], on = a.audit) => runFilter(program, { nr, arch: on, args });

  it("refuses socket(AF_UNIX) with EPERM, lets other families and socketpair through", () => {
    expect(call(a.socket, [1, 1, 0])).toBe(EPERM);
    expect(call(a.socket, [1, 2 | 0x80000, 0])).toBe(EPERM); // SOCK_DGRAM | SOCK_CLOEXEC
    for (const family of [2, 10, 16, 17]) expect(call(a.socket, [family, 1, 0])).toBe(SECCOMP_RET_ALLOW);
    expect(call(a.socket + 1, [1, 1, 0])).toBe(SECCOMP_RET_ALLOW); // socketpair, next to socket on both
  });

  it("refuses io_uring, which makes sockets without the socket call", () => {
    for (const nr of a.ioUring) expect(call(nr)).toBe(EPERM);
  });

  it("refuses a new user namespace (clone or unshare with CLONE_NEWUSER), lets every other clone and unshare through, and answers clone3 ENOSYS", () => {
    const SIGCHLD = 17;
    expect(call(a.unshare, [CLONE_NEWUSER])).toBe(EPERM);
    expect(call(a.unshare, [CLONE_NEWUSER | 0x20000 | 0x40000000])).toBe(EPERM); // with CLONE_NEWNS, CLONE_NEWNET
    expect(call(a.clone, [CLONE_NEWUSER | SIGCHLD])).toBe(EPERM);
    // fork, threads, and namespaces that need privileges a fenced process does not have
    expect(call(a.clone, [SIGCHLD])).toBe(SECCOMP_RET_ALLOW);
    expect(call(a.clone, [0x3d0f00])).toBe(SECCOMP_RET_ALLOW); // pthread_create's flags
    expect(call(a.unshare, [0x20000])).toBe(SECCOMP_RET_ALLOW);
    expect(call(a.clone3, [0])).toBe(ENOSYS);
  });

  it("ends a process calling in as another architecture (32-bit x86's socketcall)", () => {
    expect(call(102, [1], 0x40000003)).toBe(SECCOMP_RET_KILL_PROCESS);
    expect(call(a.socket, [1], 0xc00000b7 === a.audit ? 0xc000003e : 0xc00000b7)).toBe(SECCOMP_RET_KILL_PROCESS);
  });

  it("answers every other call on its own architecture with allow", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.array(fc.integer({ min: 0, max: 0xffffffff }), { maxLength: 6 }), (nr, args) => {
        const got = call(nr, args);
        const flags = args[0] ?? 0;
        const refused = (nr === a.socket && flags === 1) || a.ioUring.includes(nr) || (a.foreignFrom !== undefined && nr >= a.foreignFrom) || ((nr === a.clone || nr === a.unshare) && (flags & CLONE_NEWUSER) !== 0);
        expect(got).toBe(nr === a.clone3 ? ENOSYS : refused ? EPERM : SECCOMP_RET_ALLOW);
      }),
      { numRuns: 5000 },
    );
  });

  it("is laid out as struct sock_filter, little-endian, and in hex the same bytes", () => {
    const bytes = filterBytes(arch)!;
    expect(bytes.length).toBe(program.length * 8);
    const view = new DataView(bytes.buffer);
    program.forEach((ins, i) => {
      expect(view.getUint16(i * 8, true)).toBe(ins.code);
      expect([view.getUint8(i * 8 + 2), view.getUint8(i * 8 + 3)]).toEqual([ins.jt, ins.jf]);
      expect(view.getUint32(i * 8 + 4, true)).toBe(ins.k >>> 0);
    });
    expect(filterHex(arch)).toBe(Buffer.from(bytes).toString("hex"));
    // every jump lands inside the program
    program.forEach((ins, i) => ins.code !== 0x06 && expect(i + 1 + Math.max(ins.jt, ins.jf)).toBeLessThan(program.length));
    // the last instruction returns: nothing falls off the end
    expect(program.at(-1)!.code).toBe(0x06);
  });
});

it("has no filter for an architecture it does not know", () => {
  expect(filterProgram("ia32")).toBeUndefined();
  expect(filterBytes("mips")).toBeUndefined();
});
