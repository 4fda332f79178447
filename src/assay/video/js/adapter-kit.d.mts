// Types for adapter-kit.mjs, assay's node helper for command adapters (`assay video run --adapter-command`).

/** Any value JSON can carry: what an evaluator returns for a sample. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** `initialize`'s context: where the eval lives and the adapter config (adapter.yaml or --adapter-config). */
export interface AdapterContext {
  evalDir: string;
  config: { [key: string]: JsonValue };
  artifactsDir: string | null;
  verbose: boolean;
}

/** Decoded pixels: row-major, 3 bytes (R, G, B) per pixel; pixel (x, y) starts at (y * width + x) * 3. */
export interface RgbFrame {
  readonly width: number;
  readonly height: number;
  readonly rgb: Uint8Array;
}

/**
 * The frame as assay sent it. `bytes` and `rgb` are decoded on first access and then kept.
 *
 * From assay, frames come through shared memory: read `rgb` (or `bytes`) before `evaluate`
 * returns; the first read of a frame after its request was answered throws (its memory was
 * handed back). What was read in time stays readable. From other hosts, frames come as PNG.
 */
export interface SampleImage extends RgbFrame {
  readonly mimeType: "image/png";
  /** The lossless PNG file (for a frame from shared memory, encoded by the kit: the same pixels). */
  readonly bytes: Buffer;
}

export interface Sample {
  image: SampleImage;
  timestampS: number;
  frameIndex: number;
  sampleIndex: number;
  videoPath: string;
  caseName: string;
}

export interface Target {
  id: string;
  index: number;
  label: string | null;
  /** The target's `config` from the case file, keys as written. */
  config: { [key: string]: JsonValue };
}

export interface EvaluateRequest {
  sample: Sample;
  target: Target;
  /** Aborted when assay cancels the request (an interrupt) or stdin ends without `close`. */
  signal: AbortSignal;
}

export interface EvaluateManyRequest {
  samples: Sample[];
  target: Target;
  signal: AbortSignal;
}

/**
 * Implement `evaluate`, `evaluateMany` or both (assay then sends batches). A thrown error is that
 * request's error; `undefined` is sent as `null`.
 */
export interface Evaluator {
  evaluate?(request: EvaluateRequest): JsonValue | undefined | Promise<JsonValue | undefined>;
  /** One result per sample, in order. */
  evaluateMany?(request: EvaluateManyRequest): JsonValue[] | Promise<JsonValue[]>;
  /** Called once, after every request has been answered. */
  close?(): void | Promise<void>;
}

/**
 * Serve the protocol on stdin/stdout until `close` or the end of stdin. `createEvaluator` runs at
 * `initialize`. `console.log`, `console.info` and `console.debug` are sent to stderr, because stdout
 * carries protocol messages only.
 */
export function runAdapter(
  createEvaluator: (context: AdapterContext) => Evaluator | Promise<Evaluator>,
): Promise<void>;

/** Decode an 8-bit RGB, non-interlaced PNG (any filter types, deflated or stored). */
export function decodePng(png: Uint8Array): RgbFrame;
