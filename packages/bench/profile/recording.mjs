// The profiles the scripts here record of a drain, through the inspector: a CPU profile (sampled
// every 200 µs) and a sampled allocation profile (every 1 KB, objects collected since included).
// `startRecording(kind, file)` without a file records nothing; `stop()` writes what it recorded
// to the file.
import { writeFileSync } from "node:fs";
import inspector from "node:inspector/promises";

/** One recording: `cpu` (a `.cpuprofile`) or `alloc` (a `.heapprofile`, for summarise-alloc.mjs). */
export async function startRecording(kind, file) {
  if (file === undefined) return { stop: async () => {} };
  const session = new inspector.Session();
  session.connect();
  if (kind === "cpu") {
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 200 });
    await session.post("Profiler.start");
  } else {
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }
  return {
    async stop() {
      const { profile } = await session.post(kind === "cpu" ? "Profiler.stop" : "HeapProfiler.stopSampling");
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}
