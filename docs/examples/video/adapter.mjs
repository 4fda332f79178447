// @ts-check
// A node adapter for the starter's lamp clip, on assay's kit (adapter-kit.mjs, copied beside it).
// Run: assay video run --adapter-command "node eval/adapter.mjs"
import { runAdapter } from "./adapter-kit.mjs";

await runAdapter(async (context) => {
  // context: { evalDir, config (adapter.yaml), artifactsDir, verbose }
  const [top, bottom, left, right] = /** @type {number[]} */ (context.config.lamp_region);
  console.log(`adapter ready for ${context.evalDir}`); // goes to stderr: stdout is the protocol's

  return {
    /** @param {import("./adapter-kit.mjs").EvaluateRequest} request */
    async evaluate({ sample, target, signal }) {
      signal.throwIfAborted(); // assay cancelled this request (Ctrl-C)
      const { width, rgb } = sample.image; // the pixels, read on first access (from shared memory, or the PNG)
      let [red, green, blue] = [0, 0, 0];
      for (let y = top; y < bottom; y++) {
        for (let x = left; x < right; x++) {
          const at = (y * width + x) * 3;
          red += rgb[at];
          green += rgb[at + 1];
          blue += rgb[at + 2];
        }
      }
      const pixels = (bottom - top) * (right - left);
      const brightness = (0.2126 * red + 0.7152 * green + 0.0722 * blue) / pixels / 255;
      return {
        color: red > green ? "red" : "green",
        brightness: Math.round(brightness * 1000) / 1000,
        target: target.id,
      };
    },
    async close() {
      // release clients, flush logs
    },
  };
});
