/** Where a reporter writes. The CLI passes its own streams; tests pass string sinks. */
export interface TextSink {
  write(chunk: string): unknown;
}

export interface ReporterIo {
  stdout: TextSink;
  stderr: TextSink;
  /** Whether stdout is a terminal. */
  isTTY: boolean;
  /** The terminal's width, when known; 0 when a terminal reports none (some pseudo-terminals). */
  columns?: number;
  /** Colour wanted: a terminal, no NO_COLOR, no --no-color (the CLI decides). */
  color: boolean;
  /** The live terminal, for the tty view: its size as it is now, and word of a resize. */
  terminal?: {
    size(): TerminalSize;
    /** Calls the listener on every resize; returns what stops it. */
    onResize(listener: () => void): () => void;
  };
  env: Record<string, string | undefined>;
}

export interface TerminalSize {
  columns: number;
  rows: number;
}
