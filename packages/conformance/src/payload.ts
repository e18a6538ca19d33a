/**
 * Payloads and headers: binary, empty, unicode and 1 MB payloads arrive intact for every
 * payload type, headers too.
 *
 * @module
 */
import type { ClaimFormName, PayloadType } from "@rowclaim/core";
import { expect } from "vitest";
import { type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms } from "./tables.js";
import { patternBytes, sameBytes } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "payload";
const MEGABYTE = 1024 * 1024;

const unicode =
  "héllo wörld — ünïcödé: 日本語, עברית, العربية, emoji 🎉👩‍💻, combining é, quotes ' \" ` \\ and\nnew\r\nlines\ttabs";

/** One megabyte of text (multi-byte characters included), deterministic. */
function megabyteText(): string {
  const chunk = `${unicode} 0123456789 `;
  let text = "";
  while (text.length < MEGABYTE) text += chunk;
  return text.slice(0, MEGABYTE);
}

const samples: Record<PayloadType, () => readonly unknown[]> = {
  json: () => [
    {
      text: unicode,
      nested: [1, 2.5, -3, null, true, false, { deep: ["x", { deeper: {} }] }],
      empty: "",
      emptyList: [],
    },
    "",
    null,
    0,
    "a plain string",
    [],
    { big: megabyteText() },
  ],
  text: () => ["", unicode, " leading and trailing spaces ", megabyteText()],
  bytes: () => {
    const every = new Uint8Array(256);
    for (let i = 0; i < 256; i += 1) every[i] = i;
    return [
      new Uint8Array(0),
      every,
      Uint8Array.from([0, 0, 0]),
      new TextEncoder().encode(unicode),
      patternBytes(MEGABYTE),
    ];
  },
};

async function roundTrip(fx: Fixture, form: ClaimFormName, payloadType: PayloadType): Promise<void> {
  await fx.requireForm(form);
  const table = await fx.table(form, { payloadType, roles: ["attempt", "runAt", "headers"], lease: 30 });
  const broker = await fx.broker();
  const sent = samples[payloadType]();
  const seen: Seen[] = [];
  await broker.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 20 });
  const ids = await broker.publishMany(
    table,
    sent.map((payload) => ({ payload })),
  );
  await waitFor("every payload to arrive", () => seen.length >= sent.length);
  expect(seen).toHaveLength(sent.length);
  ids.forEach((id, index) => {
    const got = seen.find((s) => s.id === String(id));
    const want = sent[index];
    expect(got, `row ${String(id)} was not delivered`).toBeDefined();
    if (payloadType === "bytes") {
      expect(got?.payload, `payload ${index} is not a Uint8Array`).toBeInstanceOf(Uint8Array);
      const same = sameBytes(got?.payload as Uint8Array, want as Uint8Array);
      expect(
        same,
        `bytes payload ${index} (${(want as Uint8Array).byteLength} bytes) changed on the way`,
      ).toBe(true);
    } else {
      expect(got?.payload, `payload ${index} changed on the way`).toEqual(want);
    }
  });
}

/** Registers the payload sub-suite. */
export function payloadSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("payloads", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] json payloads arrive intact: nested, unicode, empty, null and 1 MB`,
        (fx) => roundTrip(fx, form, "json"),
      );
      conformanceTest(
        harness,
        SUITE,
        `[${form}] text payloads arrive intact: empty, unicode and 1 MB`,
        (fx) => roundTrip(fx, form, "text"),
      );
      conformanceTest(
        harness,
        SUITE,
        `[${form}] bytes payloads arrive intact: empty, every byte value and 1 MB`,
        (fx) => roundTrip(fx, form, "bytes"),
      );
      conformanceTest(
        harness,
        SUITE,
        `[${form}] headers arrive intact, and a row without headers reads {}`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { roles: ["attempt", "headers"] });
          const broker = await fx.broker();
          const headers = { "trace-id": "abc-123", "ünï-cödé": "値 🎉", empty: "", quote: "\"'\\" };
          const seen: Seen[] = [];
          await broker.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 20 });
          const [withHeaders, without] = await broker.publishMany(table, [
            { payload: 1, headers },
            { payload: 2 },
          ]);
          await waitFor("both rows to arrive", () => seen.length >= 2);
          expect(seen.find((s) => s.id === String(withHeaders))?.delivery.headers).toEqual(headers);
          expect(seen.find((s) => s.id === String(without))?.delivery.headers).toEqual({});
        },
      );
    }
  });
}
