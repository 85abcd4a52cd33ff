/**
 * A phase's output on its way to the reporter. Reporting costs far more per
 * line than logging, so a phase that prints faster than anyone can read is
 * not slowed down for it: per phase run, at most LINES lines a window of
 * WINDOW_MS are reported; past that, lines are left out, except the last
 * HELD of them, reported when the window ends (or the phase does) with
 * `dropped` saying how many were left out before them. The phase's log files
 * keep every line.
 */
import type { HostClock } from "../host/host.ts";
import { nodeClock } from "../host/node-clock.ts";
import type { EventInput } from "./event-log.ts";

const LINES = 1_000;
const WINDOW_MS = 100;
const HELD = 10;

type Stream = "stdout" | "stderr";

export class LiveOutput {
  private readonly emit: (event: EventInput) => void;
  private readonly phase: string;
  /** Lines reported in the current window, and when it began. */
  private passed = 0;
  private windowStart = 0;
  /** Lines left out since the last one reported. */
  private dropped = 0;
  /** The last lines past the budget, reported when the window ends. */
  private held: { stream: Stream; line: string }[] = [];
  private timer: unknown;
  private readonly clock: HostClock;

  constructor(emit: (event: EventInput) => void, phase: string, clock: HostClock = nodeClock) {
    this.clock = clock;
    this.emit = emit;
    this.phase = phase;
  }

  push(stream: Stream, line: string): void {
    if (this.timer === undefined) {
      if (this.passed === 0) this.windowStart = this.clock.monotonic();
      if (this.passed < LINES) {
        this.passed += 1;
        this.send(stream, line);
        return;
      }
      const left = this.windowStart + WINDOW_MS - this.clock.monotonic();
      if (left <= 0) {
        this.passed = 1;
        this.windowStart = this.clock.monotonic();
        this.send(stream, line);
        return;
      }
      this.timer = this.clock.setTimer(() => this.release(), left);
    }
    this.held.push({ stream, line });
    if (this.held.length > HELD) {
      this.held.shift();
      this.dropped += 1;
    }
  }

  /** The phase ended: report what is held. */
  end(): void {
    this.release();
  }

  private release(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.passed = 0;
    const held = this.held;
    this.held = [];
    for (const { stream, line } of held) this.send(stream, line);
  }

  private send(stream: Stream, line: string): void {
    if (this.dropped > 0) {
      this.emit({ type: "phase.output", phase: this.phase, stream, line, dropped: this.dropped });
      this.dropped = 0;
    } else this.emit({ type: "phase.output", phase: this.phase, stream, line });
  }
}
