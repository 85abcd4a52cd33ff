/**
 * The seccomp filter every fenced process runs under, as the classic BPF program bubblewrap
 * loads with `--seccomp FD`: a Unix socket (`socket(AF_UNIX, …)`) is refused with EPERM, so a
 * service listening on one on the host (a Docker socket, an SSH agent, a desktop bus) is out
 * of reach even where its path can be seen; io_uring is refused (it creates sockets without
 * the socket call); a system call of another architecture than the one the filter was made
 * for (32-bit x86's `socketcall`) ends the process, and x32's numbers are refused; no user
 * namespace can be made (clone and unshare with CLONE_NEWUSER are refused, clone3 answers
 * ENOSYS). Everything else passes.
 * `socketpair` stays allowed: it makes a connected pair and reaches nothing (libuv's pipes to
 * child processes are made with it).
 *
 * Pure: the architecture in, the program's bytes out (struct sock_filter, little-endian).
 */

/** What the filter needs to know of an architecture. */
interface Arch {
  /** AUDIT_ARCH_* as the kernel reports it in seccomp_data.arch. */
  audit: number;
  socket: number;
  /** io_uring_setup, io_uring_enter, io_uring_register. */
  ioUring: readonly number[];
  /** clone and unshare: their first argument holds the namespace flags. */
  clone: number;
  unshare: number;
  /** clone3: its flags are in memory the filter cannot read. */
  clone3: number;
  /** System call numbers at or above this are another ABI's (x32 on x86-64). */
  foreignFrom?: number;
  /** prctl's number, for a loader that puts the filter on itself. */
  prctl: number;
}

export const ARCHES: Readonly<Record<string, Arch>> = {
  x64: { audit: 0xc000003e, socket: 41, ioUring: [425, 426, 427], clone: 56, unshare: 272, clone3: 435, foreignFrom: 0x40000000, prctl: 157 },
  arm64: { audit: 0xc00000b7, socket: 198, ioUring: [425, 426, 427], clone: 220, unshare: 97, clone3: 435, prctl: 167 },
};

// BPF opcodes
const LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JSET_K = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RET_K = 0x06; // BPF_RET | BPF_K

export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;
const AF_UNIX = 1;
export const CLONE_NEWUSER = 0x10000000;

/** Offsets in struct seccomp_data. */
const NR = 0;
const ARCH = 4;
/** The low 32 bits of args[0] (little-endian): the socket's domain, clone's and unshare's flags. */
const ARG0_LOW = 16;

export interface Instruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** An instruction whose jumps name labels; a label names the instruction after it. */
type Step = { label: string } | { code: number; k: number; jt?: string; jf?: string };

/** The steps as the kernel takes them: each jump counts the instructions it skips (forward only). */
function assemble(steps: readonly Step[]): Instruction[] {
  const at = new Map<string, number>();
  let n = 0;
  for (const step of steps) {
    if ("label" in step) at.set(step.label, n);
    else n++;
  }
  const out: Instruction[] = [];
  for (const step of steps) {
    if ("label" in step) continue;
    const here = out.length;
    const offset = (label: string | undefined) => {
      if (label === undefined) return 0;
      const to = at.get(label);
      if (to === undefined || to <= here || to - here - 1 > 255) throw new Error(`seccomp filter: bad jump to ${label}`);
      return to - here - 1;
    };
    out.push({ code: step.code, jt: offset(step.jt), jf: offset(step.jf), k: step.k });
  }
  return out;
}

/**
 * The filter as instructions, for the architecture named as Node names it (`x64`, `arm64`);
 * undefined for another. Besides the Unix socket and io_uring, no user namespace can be made
 * inside (one of its own could undo the fence's read-only binds): clone and unshare with
 * CLONE_NEWUSER are refused, and clone3, whose flags the filter cannot read, answers ENOSYS,
 * on which the C library and language runtimes fall back to clone.
 */
export function filterProgram(arch: string): Instruction[] | undefined {
  const a = ARCHES[arch];
  if (a === undefined) return undefined;
  const ret = (k: number): Step => ({ code: RET_K, k });
  return assemble([
    { code: LD_W_ABS, k: ARCH },
    { code: JEQ_K, k: a.audit, jf: "kill" },
    { code: LD_W_ABS, k: NR },
    ...(a.foreignFrom !== undefined ? [{ code: JGE_K, k: a.foreignFrom, jt: "deny" }] : []),
    ...a.ioUring.map((nr) => ({ code: JEQ_K, k: nr, jt: "deny" })),
    { code: JEQ_K, k: a.clone3, jt: "nosys" },
    { code: JEQ_K, k: a.socket, jt: "socket" },
    { code: JEQ_K, k: a.clone, jt: "flags" },
    { code: JEQ_K, k: a.unshare, jt: "flags" },
    ret(SECCOMP_RET_ALLOW),
    // the socket call: its domain decides
    { label: "socket" },
    { code: LD_W_ABS, k: ARG0_LOW },
    { code: JEQ_K, k: AF_UNIX, jt: "deny", jf: "allow" },
    // clone and unshare: a new user namespace is refused, every other flag passes
    { label: "flags" },
    { code: LD_W_ABS, k: ARG0_LOW },
    { code: JSET_K, k: CLONE_NEWUSER, jt: "deny" },
    { label: "allow" },
    ret(SECCOMP_RET_ALLOW),
    { label: "deny" },
    ret(SECCOMP_RET_ERRNO | EPERM),
    { label: "nosys" },
    ret(SECCOMP_RET_ERRNO | ENOSYS),
    { label: "kill" },
    ret(SECCOMP_RET_KILL_PROCESS),
  ]);
}

/** Each architecture's program, made once: every fenced phase asks for it. */
const made = new Map<string, { bytes: Uint8Array; hex: string } | undefined>();

function filterOf(arch: string): { bytes: Uint8Array; hex: string } | undefined {
  if (!made.has(arch)) {
    const bytes = encode(arch);
    made.set(arch, bytes === undefined ? undefined : { bytes, hex: [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("") });
  }
  return made.get(arch);
}

/** The program's bytes in hex (for a loader given them as an argument). */
export function filterHex(arch: string): string | undefined {
  return filterOf(arch)?.hex;
}

/** The program's bytes as the kernel takes them (8 bytes an instruction, little-endian). */
export function filterBytes(arch: string): Uint8Array | undefined {
  const bytes = filterOf(arch)?.bytes;
  return bytes === undefined ? undefined : bytes.slice();
}

function encode(arch: string): Uint8Array | undefined {
  const program = filterProgram(arch);
  if (program === undefined) return undefined;
  const out = new Uint8Array(program.length * 8);
  const view = new DataView(out.buffer);
  program.forEach((ins, i) => {
    view.setUint16(i * 8, ins.code, true);
    view.setUint8(i * 8 + 2, ins.jt);
    view.setUint8(i * 8 + 3, ins.jf);
    view.setUint32(i * 8 + 4, ins.k >>> 0, true);
  });
  return out;
}

/**
 * What the program answers for a system call, run as the kernel would run it: a small BPF
 * interpreter for the instructions the filter uses (for tests, and to check a program before
 * it is handed over).
 */
export function runFilter(program: readonly Instruction[], data: { nr: number; arch: number; args?: readonly number[] }): number {
  const word = (offset: number): number => {
    if (offset === NR) return data.nr >>> 0;
    if (offset === ARCH) return data.arch >>> 0;
    if (offset >= 16 && offset < 64 && offset % 8 === 0) return (data.args?.[(offset - 16) / 8] ?? 0) >>> 0;
    throw new Error(`load from ${offset}`);
  };
  let acc = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const ins = program[pc]!;
    if (ins.code === LD_W_ABS) acc = word(ins.k);
    else if (ins.code === JEQ_K) pc += acc === ins.k >>> 0 ? ins.jt : ins.jf;
    else if (ins.code === JGE_K) pc += acc >= ins.k >>> 0 ? ins.jt : ins.jf;
    else if (ins.code === JSET_K) pc += (acc & ins.k) >>> 0 !== 0 ? ins.jt : ins.jf;
    else if (ins.code === RET_K) return ins.k >>> 0;
    else throw new Error(`opcode ${ins.code}`);
  }
  throw new Error("fell off the end");
}
