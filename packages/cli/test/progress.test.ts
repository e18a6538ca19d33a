import { describe, expect, it } from "vitest";
import {
  formatProgressLine,
  formatRate,
  ProgressDisplay,
  type ProgressSample,
  renderBar,
} from "../src/progress.js";

function collectingStream(isTTY: boolean): { write(text: string): void; isTTY: boolean; text: () => string } {
  let written = "";
  return {
    isTTY,
    write(text: string) {
      written += text;
    },
    text: () => written,
  };
}

describe("renderBar", () => {
  it("fills the share of cells done and clamps outside 0…1", () => {
    expect(renderBar(0, 10)).toBe("----------");
    expect(renderBar(0.5, 10)).toBe("#####-----");
    expect(renderBar(1, 10)).toBe("##########");
    expect(renderBar(2, 4)).toBe("####");
    expect(renderBar(-1, 4)).toBe("----");
    expect(renderBar(Number.NaN, 4)).toBe("----");
  });
});

describe("formatProgressLine", () => {
  const line = {
    label: "lease",
    total: 3000,
    handled: 1480,
    retried: 12,
    deadLettered: 20,
    perSecond: 812.4,
  };

  it("shows done/total, handled/s, retries and dead letters", () => {
    const text = formatProgressLine(line, { bar: false });
    expect(text).toContain("1500/3000");
    expect(text).toContain("812 handled/s");
    expect(text).toContain("retries 12");
    expect(text).toContain("dead 20");
  });

  it("adds a bar when asked", () => {
    expect(formatProgressLine(line, { bar: true })).toContain("[############------------]");
  });

  it("formats small rates with a decimal and nothing as 0", () => {
    expect(formatRate(2.25)).toBe("2.3");
    expect(formatRate(0)).toBe("0");
    expect(formatRate(Number.POSITIVE_INFINITY)).toBe("0");
  });
});

describe("ProgressDisplay", () => {
  const samples: ProgressSample[] = [
    { label: "lease", total: 100, handled: 0, retried: 0, deadLettered: 0 },
    { label: "advisory", total: 100, handled: 0, retried: 0, deadLettered: 0 },
  ];

  it("writes one plain line with every table when stderr is not a terminal", () => {
    const stream = collectingStream(false);
    const display = new ProgressDisplay({ stream, sample: () => samples, now: () => 0 });
    display.draw();
    expect(stream.text()).toBe(
      `${formatProgressLine({ ...samples[0]!, perSecond: 0 }, { bar: false })} | ${formatProgressLine({ ...samples[1]!, perSecond: 0 }, { bar: false })}\n`,
    );
    expect(stream.text()).not.toContain("\u001b[");
  });

  it("redraws in place on a terminal: cursor up over the lines drawn before", () => {
    const stream = collectingStream(true);
    const display = new ProgressDisplay({ stream, sample: () => samples, now: () => 0 });
    display.draw();
    expect(stream.text()).not.toContain("\u001b[");
    display.draw();
    expect(stream.text()).toContain("\u001b[2A");
    expect(stream.text().match(/\[-{24}\]/g)).toHaveLength(4);
  });

  it("measures handled/s between samples on its clock", () => {
    let now = 0;
    const current: ProgressSample[] = [
      { label: "lease", total: 100, handled: 0, retried: 0, deadLettered: 0 },
    ];
    const display = new ProgressDisplay({
      stream: collectingStream(false),
      sample: () => current,
      now: () => now,
    });
    display.start();
    display.stop();
    now = 2000;
    current[0] = { ...current[0]!, handled: 50 };
    expect(display.lines()[0]?.perSecond).toBe(25);
  });

  it("prints a message above a terminal display and draws again below it", () => {
    const stream = collectingStream(true);
    const display = new ProgressDisplay({ stream, sample: () => samples, now: () => 0 });
    display.draw();
    display.log("a warning");
    expect(stream.text()).toContain("\u001b[2A\r\u001b[Ja warning\n");
  });
});
