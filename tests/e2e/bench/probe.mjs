// The benches' posted-message probe, installed in the page as an init script
// (`context.addInitScript(gapProbe)`): `window.__gapProbe`. It posts a message to itself, again and
// again; each gap between two of its messages is at least the task (or frame) that ran in between,
// so the largest gap bounds the longest main-thread task from above, also below 50 ms where
// longtask entries say nothing. It keeps one of the machine's cores busy while it runs, so a timed
// run should not have it on (import.bench.mjs measured that).
//   start()  clears what it found and runs (a run already going stops)
//   stop()   stops it; `gaps` (those over 16 ms, {start, ms}) and `max` (the largest) stay readable
//   reset()  clears what it found

/** The init script (runs in the page: nothing from this module is in scope there). */
export function gapProbe() {
  const p = (window.__gapProbe = { gaps: [], max: 0, run: 0 });
  p.reset = () => {
    p.gaps = [];
    p.max = 0;
  };
  p.start = () => {
    p.reset();
    const run = ++p.run;
    const ch = new MessageChannel();
    let last = performance.now();
    ch.port1.onmessage = () => {
      const now = performance.now();
      const gap = now - last;
      p.max = Math.max(p.max, gap);
      if (gap > 16) p.gaps.push({ start: last, ms: gap });
      last = now;
      if (p.run === run) ch.port2.postMessage(0);
    };
    ch.port2.postMessage(0);
  };
  p.stop = () => {
    p.run += 1;
  };
}
