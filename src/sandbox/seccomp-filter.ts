/**
 * The seccomp filter every fenced process runs under, as the classic BPF program bubblewrap
 * loads with `--seccomp FD`: a Unix socket (`socket(AF_UNIX, …)`) is refused with EPERM, so a
 * service listening on one on the host (a Docker socket, an SSH agent, a desktop bus) is out
 * of reach even where its path can be seen; io_uring is refused (it creates sockets without
 * the socket call); a system call of another architecture than the one the filter was made
 * for (32-bit x86's `socketcall`) ends the process, and x32's numbers are refused. Everything
 * else passes.
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
  /** System call numbers at or above this are another ABI's (x32 on x86-64). */
  foreignFrom?: number;
  /** prctl's number, for a loader that puts the filter on itself. */
  prctl: number;
}

export const ARCHES: Readonly<Record<string, Arch>> = {
  x64: { audit: 0xc000003e, socket: 41, ioUring: [425, 426, 427], foreignFrom: 0x40000000, prctl: 157 },
  arm64: { audit: 0xc00000b7, socket: 198, ioUring: [425, 426, 427], prctl: 167 },
};

// BPF opcodes
const LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K = 0x06; // BPF_RET | BPF_K

export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const AF_UNIX = 1;

/** Offsets in struct seccomp_data. */
const NR = 0;
const ARCH = 4;
/** The low 32 bits of args[0] (little-endian): the socket's domain is an int. */
const ARG0_LOW = 16;

export interface Instruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** The filter as instructions, for the architecture named as Node names it (`x64`, `arm64`); undefined for another. */
export function filterProgram(arch: string): Instruction[] | undefined {
  const a = ARCHES[arch];
  if (a === undefined) return undefined;
  const deny = { code: RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ERRNO | EPERM };
  const allow = { code: RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW };
  const kill = { code: RET_K, jt: 0, jf: 0, k: SECCOMP_RET_KILL_PROCESS };
  // built from the end: each jump counts the instructions it skips
  const tail: Instruction[] = [
    // the socket call: its domain decides
    { code: LD_W_ABS, jt: 0, jf: 0, k: ARG0_LOW },
    { code: JEQ_K, jt: 0, jf: 1, k: AF_UNIX },
    deny,
    allow,
  ];
  const body: Instruction[] = [];
  // after the number is loaded: io_uring → deny; socket → the tail; else allow
  const checks: Instruction[] = [];
  const ioUring = a.ioUring;
  // layout: [foreign?] [io_uring jeq …] [socket jeq] allow deny tail
  const rest = ioUring.length + 1; // jeqs after the foreign check
  if (a.foreignFrom !== undefined) checks.push({ code: JGE_K, jt: rest + 1, jf: 0, k: a.foreignFrom });
  ioUring.forEach((nr, i) => checks.push({ code: JEQ_K, jt: ioUring.length - i + 1, jf: 0, k: nr }));
  checks.push({ code: JEQ_K, jt: 2, jf: 0, k: a.socket });
  body.push(...checks, allow, deny, ...tail);
  return [
    { code: LD_W_ABS, jt: 0, jf: 0, k: ARCH },
    { code: JEQ_K, jt: 1, jf: 0, k: a.audit },
    kill,
    { code: LD_W_ABS, jt: 0, jf: 0, k: NR },
    ...body,
  ];
}

/** The program's bytes as the kernel takes them (8 bytes an instruction, little-endian). */
/** The program's bytes in hex (for a loader given them as an argument). */
export function filterHex(arch: string): string | undefined {
  const bytes = filterBytes(arch);
  return bytes === undefined ? undefined : [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export function filterBytes(arch: string): Uint8Array | undefined {
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
    else if (ins.code === RET_K) return ins.k >>> 0;
    else throw new Error(`opcode ${ins.code}`);
  }
  throw new Error("fell off the end");
}
