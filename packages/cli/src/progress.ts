/**
 * The progress display of `demo` and `bench`, on stderr: on a terminal one line per table,
 * redrawn in place several times a second; elsewhere (a pipe, a CI log) one plain line every
 * second.
 *
 * @module
 */

/** Where the display writes: a stream that may be a terminal. */
export interface ProgressStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/** One table's counters at one moment. */
export interface ProgressSample {
  /** The table's label (its form). */
  readonly label: string;
  /** How many jobs the table will have handled or dead-lettered when done. */
  readonly total: number;
  /** Jobs acked so far. */
  readonly handled: number;
  /** Deliveries retried so far. */
  readonly retried: number;
  /** Jobs moved to the dead-letter group so far. */
  readonly deadLettered: number;
}

/** A sample with the rate since the previous one. */
export interface ProgressLine extends ProgressSample {
  /** Jobs handled per second, over the last interval. */
  readonly perSecond: number;
}

/** Draws `fraction` (clamped to 0…1) as a bar of `width` cells. */
export function renderBar(fraction: number, width: number): string {
  const clamped = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
  const filled = Math.round(clamped * width);
  return `${"#".repeat(filled)}${"-".repeat(width - filled)}`;
}

/** One table's line: label, bar, done/total, handled/s, retries, dead letters. */
export function formatProgressLine(
  line: ProgressLine,
  options: { bar: boolean; labelWidth?: number },
): string {
  const done = line.handled + line.deadLettered;
  const totalWidth = String(line.total).length;
  const label = line.label.padEnd(options.labelWidth ?? line.label.length);
  const bar = options.bar ? ` [${renderBar(line.total === 0 ? 1 : done / line.total, 24)}]` : "";
  return `${label}${bar} ${String(done).padStart(totalWidth)}/${line.total} ${formatRate(line.perSecond).padStart(7)} handled/s  retries ${line.retried}  dead ${line.deadLettered}`;
}

/** A rate for people: `1234/s` style numbers without the unit, one decimal under 10. */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return "0";
  return perSecond < 10 ? perSecond.toFixed(1) : String(Math.round(perSecond));
}

/** How a {@link ProgressDisplay} is made. */
export interface ProgressOptions {
  /** Where to draw (stderr). */
  readonly stream: ProgressStream;
  /** Reads every table's counters now. */
  readonly sample: () => readonly ProgressSample[];
  /** Redraw interval on a terminal, in ms. Default 100. */
  readonly ttyIntervalMs?: number;
  /** Line interval elsewhere, in ms. Default 1000. */
  readonly plainIntervalMs?: number;
  /** The clock, in ms. Default `performance.now`. */
  readonly now?: () => number;
}

/**
 * Draws the counters of several tables until stopped. On a terminal the lines are redrawn in
 * place (cursor up, clear line); elsewhere one line with every table is written each second.
 */
export class ProgressDisplay {
  readonly #options: ProgressOptions;
  readonly #tty: boolean;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #drawnLines = 0;
  #last: { at: number; handled: Map<string, number> } | undefined;
  #rates = new Map<string, number>();

  constructor(options: ProgressOptions) {
    this.#options = options;
    this.#tty = options.stream.isTTY === true;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Starts drawing. */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#last = {
      at: this.#now(),
      handled: new Map(this.#options.sample().map((s) => [s.label, s.handled])),
    };
    const interval = this.#tty
      ? (this.#options.ttyIntervalMs ?? 100)
      : (this.#options.plainIntervalMs ?? 1000);
    this.#timer = setInterval(() => this.draw(), interval);
    this.#timer.unref();
  }

  /** Writes a message above the display (a terminal's lines are redrawn below it). */
  log(message: string): void {
    this.#clear();
    this.#options.stream.write(`${message}\n`);
    this.#drawnLines = 0;
  }

  /** Draws once now. */
  draw(): void {
    const lines = this.lines();
    const labelWidth = Math.max(0, ...lines.map((line) => line.label.length));
    if (this.#tty) {
      this.#clear();
      const width = this.#options.stream.columns ?? 120;
      const text = lines.map((line) =>
        formatProgressLine(line, { bar: true, labelWidth }).slice(0, Math.max(20, width - 1)),
      );
      this.#options.stream.write(`${text.join("\n")}\n`);
      this.#drawnLines = text.length;
    } else {
      this.#options.stream.write(
        `${lines.map((line) => formatProgressLine(line, { bar: false })).join(" | ")}\n`,
      );
    }
  }

  /** The current lines, with rates measured since the previous call (at most every 500 ms). */
  lines(): ProgressLine[] {
    const samples = this.#options.sample();
    const now = this.#now();
    const last = this.#last;
    if (last !== undefined && now - last.at >= 500) {
      const seconds = (now - last.at) / 1000;
      for (const sample of samples) {
        const before = last.handled.get(sample.label) ?? 0;
        this.#rates.set(sample.label, (sample.handled - before) / seconds);
      }
      this.#last = { at: now, handled: new Map(samples.map((s) => [s.label, s.handled])) };
    }
    // Until a whole window has passed, the rate since the display started.
    const window = this.#last;
    const early = (sample: ProgressSample): number => {
      if (window === undefined || now <= window.at) return 0;
      return (sample.handled - (window.handled.get(sample.label) ?? 0)) / ((now - window.at) / 1000);
    };
    return samples.map((sample) => ({
      ...sample,
      perSecond: this.#rates.get(sample.label) ?? early(sample),
    }));
  }

  /** Stops drawing; on a terminal the last frame is left on screen. */
  stop(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.draw();
    this.#drawnLines = 0;
  }

  #clear(): void {
    if (!this.#tty || this.#drawnLines === 0) return;
    // Up to the first drawn line, then clear to the end of the screen.
    this.#options.stream.write(`\u001b[${this.#drawnLines}A\r\u001b[J`);
    this.#drawnLines = 0;
  }
}
