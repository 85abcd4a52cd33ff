/** A crash injected into the memory host at one of its writes. */

/** Thrown by the write a crash was injected at, and by every write after it. */
export class HostCrash extends Error {
  readonly write: number;
  constructor(write: number) {
    super(`crash injected at write ${write}`);
    this.write = write;
  }
}
