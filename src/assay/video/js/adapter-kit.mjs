// assay's adapter kit for node: serves the NDJSON command-adapter protocol (spec/video.md §24) and
// hands every frame over as a lazily decoded RGB image. Node's standard library only, no npm packages.
// With assay it takes frames through shared memory (assay's extension, docs/video/protocol.md);
// with any other host, as base64 PNG.
//
//   import { runAdapter } from "./adapter-kit.mjs";
//   await runAdapter(async (context) => ({ evaluate: async ({ sample, target }) => sample.image.rgb[0] > 127 }));
//
// Types: adapter-kit.d.mts beside this file.
import { closeSync, openSync, readSync } from "node:fs";
import * as zlib from "node:zlib";

const { deflateSync, inflateSync } = zlib;

// ---------------------------------------------------------------------------------------------
// PNG decoding: assay sends 8-bit RGB, non-interlaced PNGs, deflated (Up filter) or as stored
// deflate blocks; any encoder's filter choice (all five types) decodes here.

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const RGB_BYTES = 3;

function asBuffer(bytes) {
  if (Buffer.isBuffer(bytes)) return bytes;
  if (bytes instanceof Uint8Array) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new TypeError("decodePng expects a Buffer or Uint8Array");
}

function readHeader(body) {
  if (body.length !== 13) throw new Error("PNG IHDR chunk has the wrong length");
  const header = {
    width: body.readUInt32BE(0),
    height: body.readUInt32BE(4),
    bitDepth: body[8],
    colorType: body[9],
    interlace: body[12],
  };
  if (header.bitDepth !== 8 || header.colorType !== 2) {
    throw new Error(`PNG must be 8-bit RGB (got bit depth ${header.bitDepth}, colour type ${header.colorType})`);
  }
  if (body[10] !== 0 || body[11] !== 0) throw new Error("PNG uses an unknown compression or filter method");
  if (header.interlace !== 0) throw new Error("interlaced PNGs are not supported");
  if (header.width === 0 || header.height === 0) throw new Error("PNG has no pixels");
  return header;
}

// Undo one row's filter into `out`, reading the row above from `above` (zeros on the first row).
// Writes into a Uint8Array wrap modulo 256, which is the PNG arithmetic, so no masking is needed.
function unfilterRow(filter, line, above, out) {
  const length = line.length;
  switch (filter) {
    case 0:
      out.set(line);
      return;
    case 1:
      for (let x = 0; x < RGB_BYTES; x++) out[x] = line[x];
      for (let x = RGB_BYTES; x < length; x++) out[x] = line[x] + out[x - RGB_BYTES];
      return;
    case 2:
      for (let x = 0; x < length; x++) out[x] = line[x] + above[x];
      return;
    case 3:
      for (let x = 0; x < RGB_BYTES; x++) out[x] = line[x] + (above[x] >> 1);
      for (let x = RGB_BYTES; x < length; x++) out[x] = line[x] + ((out[x - RGB_BYTES] + above[x]) >> 1);
      return;
    case 4:
      // Paeth with no left neighbour predicts the byte above.
      for (let x = 0; x < RGB_BYTES; x++) out[x] = line[x] + above[x];
      for (let x = RGB_BYTES; x < length; x++) {
        const left = out[x - RGB_BYTES];
        const up = above[x];
        const upLeft = above[x - RGB_BYTES];
        const toLeft = Math.abs(up - upLeft);
        const toUp = Math.abs(left - upLeft);
        const toUpLeft = Math.abs(left + up - 2 * upLeft);
        out[x] = line[x] + (toLeft <= toUp && toLeft <= toUpLeft ? left : toUp <= toUpLeft ? up : upLeft);
      }
      return;
    default:
      throw new Error(`PNG row uses unknown filter type ${filter}`);
  }
}

export function decodePng(png) {
  const data = asBuffer(png);
  if (data.length < PNG_SIGNATURE.length || !data.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) {
    throw new Error("not a PNG (bad signature)");
  }
  let header = null;
  const idat = [];
  for (let offset = PNG_SIGNATURE.length; offset + 8 <= data.length; ) {
    const length = data.readUInt32BE(offset);
    const type = data.toString("latin1", offset + 4, offset + 8);
    const body = data.subarray(offset + 8, offset + 8 + length);
    if (body.length !== length) throw new Error(`PNG ${type} chunk is truncated`);
    if (type === "IHDR") header = readHeader(body);
    else if (type === "IDAT") idat.push(body);
    else if (type === "IEND") break;
    offset += 12 + length;
  }
  if (header === null) throw new Error("PNG has no IHDR chunk");
  if (idat.length === 0) throw new Error("PNG has no IDAT chunk");
  const { width, height } = header;
  const stride = width * RGB_BYTES;
  // inflate reads stored blocks as well as compressed ones; assay writes a single IDAT chunk.
  const rows = inflateSync(idat.length === 1 ? idat[0] : Buffer.concat(idat));
  if (rows.length < height * (stride + 1)) throw new Error("PNG image data is shorter than its size says");
  const rgb = new Uint8Array(height * stride);
  let above = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const start = y * (stride + 1);
    const out = rgb.subarray(y * stride, (y + 1) * stride);
    unfilterRow(rows[start], rows.subarray(start + 1, start + 1 + stride), above, out);
    above = out;
  }
  return { width, height, rgb };
}

// PNG encoding, for `image.bytes` of a frame that came as pixels through shared memory: the same
// choice assay makes (Up filter and fast deflate, or stored blocks for frames that hardly compress).

const CRC_TABLE = Int32Array.from({ length: 256 }, (_, byte) => {
  let crc = byte;
  for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? 0xedb88320 ^ (crc >>> 1) : crc >>> 1;
  return crc;
});

function tableCrc32(bytes, crc = 0) {
  crc = ~crc;
  for (let i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return ~crc >>> 0;
}

const crc32 = zlib.crc32 ?? tableCrc32; // zlib.crc32 arrived in node 20.15 / 22.2

function pngChunk(type, body) {
  const chunk = Buffer.alloc(12 + body.length);
  chunk.writeUInt32BE(body.length, 0);
  chunk.write(type, 4, "latin1");
  body.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + body.length)), 8 + body.length);
  return chunk;
}

// assay's rule (png_encoding.STORED_ABOVE_RATIO): deflate only if eight 4-row bands keep <= 30%.
function worthDeflating(rows, height, line) {
  const bands = 8;
  const bandRows = 4;
  if (height <= 2 * bands * bandRows) return true;
  const probe = Buffer.concat(
    Array.from({ length: bands }, (_, band) => {
      const top = 1 + Math.floor((band * (height - 1 - bandRows)) / (bands - 1));
      return rows.subarray(top * line, (top + bandRows) * line);
    }),
  );
  return deflateSync(probe, { level: 1 }).length <= 0.3 * probe.length;
}

function encodePng(width, height, rgb) {
  const stride = width * RGB_BYTES;
  const line = stride + 1;
  const rows = Buffer.allocUnsafe(height * line);
  for (let y = 0; y < height; y++) {
    const at = y * line;
    const row = y * stride;
    rows[at] = 2; // Up
    if (y === 0) rows.set(rgb.subarray(0, stride), at + 1);
    else for (let x = 0; x < stride; x++) rows[at + 1 + x] = rgb[row + x] - rgb[row - stride + x];
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // RGB
  const idat = deflateSync(rows, { level: worthDeflating(rows, height, line) ? 1 : 0 });
  return Buffer.concat([PNG_SIGNATURE, pngChunk("IHDR", header), pngChunk("IDAT", idat), pngChunk("IEND", Buffer.alloc(0))]);
}

// ---------------------------------------------------------------------------------------------
// Frames through shared memory (assay's extension to the protocol). assay writes each frame's RGB
// pixels into a slot of a file in /dev/shm and names the slot in the request; the kit opens the
// file once and copies a frame out with one pread when the evaluator first reads it. Node has no
// mmap without npm packages; a pread of a 720p frame costs ~0.3 ms, and nothing at all when
// the evaluator never reads the pixels. assay reuses a slot only after the request that named it
// was answered, so a frame is readable while its request is in flight; each slot carries the
// generation of the frame it holds, checked before and after the copy.

const SHARED_FRAMES = "assay.sharedFrames";
const SEGMENT_MAGIC = Buffer.from("ASSAYFR1", "latin1");

class SharedFrames {
  #fd;
  #stamp = Buffer.alloc(8);

  constructor({ version, path, token }) {
    if (version !== 1) throw new Error(`unsupported shared-frames version: ${version}`);
    this.#fd = openSync(path, "r");
    try {
      const header = Buffer.alloc(24);
      readSync(this.#fd, header, 0, header.length, 0);
      if (!header.subarray(0, 8).equals(SEGMENT_MAGIC) || header.toString("hex", 8, 24) !== token) {
        throw new Error(`${path} is not the segment assay offered`);
      }
    } catch (error) {
      closeSync(this.#fd);
      throw error;
    }
  }

  #generation(offset) {
    readSync(this.#fd, this.#stamp, 0, 8, offset - 8);
    return this.#stamp.readBigUInt64LE(0);
  }

  /** The frame's pixels, copied out of its slot. */
  read({ slot, generation, offset, length }) {
    const copy = Buffer.allocUnsafeSlow(8 + length);
    let done = 0;
    while (done < copy.length) {
      const bytes = readSync(this.#fd, copy, done, copy.length - done, offset - 8 + done);
      if (bytes === 0) throw new Error(`shared frame slot ${slot} is shorter than the request says`);
      done += bytes;
    }
    const expected = BigInt(generation);
    const found = this.#generation(offset);
    if (copy.readBigUInt64LE(0) !== expected || found !== expected) {
      throw new Error(`shared frame slot ${slot} no longer holds generation ${generation} (it holds ${found})`);
    }
    return new Uint8Array(copy.buffer, copy.byteOffset + 8, length);
  }

  close() {
    closeSync(this.#fd);
  }
}

// ---------------------------------------------------------------------------------------------
// Reading requests. They carry multi-megabyte frames, so nothing per frame is allocated fresh if it
// can be reused: stdin's chunks are copied into one growing buffer, lines are parsed where they lie,
// and each frame's base64 text is cut out before JSON.parse (see parseRequest).
//
// stdin is read as a stream (the pipe is polled by the event loop), not with fs.read: a read waiting
// in libuv's thread pool holds node's exit until the read returns, so an adapter that crashed (an
// uncaught exception) or called process.exit() while the kit waited for the next request stayed
// alive, and assay, waiting for its answer, with it.

function chunkReader(stream) {
  const chunks = stream[Symbol.asyncIterator]();
  let rest = null; // the part of the last chunk that did not fit
  const readInto = async (buffer, offset) => {
    if (rest === null) {
      const next = await chunks.next();
      if (next.done) return 0;
      rest = next.value;
    }
    const bytes = rest.copy(buffer, offset);
    rest = bytes < rest.length ? rest.subarray(bytes) : null;
    return bytes;
  };
  // Stop reading (after `close`): an open stdin would keep the process running.
  readInto.stop = () => stream.destroy();
  return readInto;
}

const READ_AT_LEAST = 1 << 20; // the pipe's size: room for one full read

async function* requestsFrom(readInto) {
  let buffer = Buffer.allocUnsafeSlow(1 << 23);
  let start = 0; // the unparsed line begins here
  let end = 0; // bytes read so far
  for (;;) {
    if (buffer.length - end < READ_AT_LEAST) {
      // Move the unfinished line to the front (only it is copied), or grow for a long line.
      const target = end - start + READ_AT_LEAST > buffer.length ? Buffer.allocUnsafeSlow(buffer.length * 2) : buffer;
      buffer.copy(target, 0, start, end);
      [buffer, end, start] = [target, end - start, 0];
    }
    const bytes = await readInto(buffer, end);
    if (bytes === 0) break;
    const filled = buffer.subarray(0, end + bytes);
    for (let newline = filled.indexOf(10, end); newline !== -1; newline = filled.indexOf(10, start)) {
      yield parseRequest(filled.subarray(start, newline));
      start = newline + 1;
    }
    end += bytes;
    if (start === end) start = end = 0;
  }
  if (end > start) yield parseRequest(buffer.subarray(start, end));
}

// Parsing a frame's base64 as JSON would build two multi-megabyte strings per frame (the line and
// the value), so each "dataBase64" value is copied out as bytes and replaced by a short mark before
// JSON.parse. Base64 has no quotes or escapes: the value ends at the next quote, and a value with
// a backslash sends the whole line down the plain path.
const FRAME_FIELD = Buffer.from('"dataBase64":"');
const FRAME_MARK = "#frame:"; // '#' is not a base64 character
const FRAMES = Symbol("frames");

function parseRequest(line) {
  const frames = [];
  const text = [];
  let from = 0;
  for (let at = line.indexOf(FRAME_FIELD); at !== -1; at = line.indexOf(FRAME_FIELD, from)) {
    const valueStart = at + FRAME_FIELD.length;
    const close = line.indexOf(34, valueStart);
    if (close === -1) break;
    const value = line.subarray(valueStart, close);
    if (value.includes(92)) return JSON.parse(line.toString("utf8"));
    text.push(line.toString("utf8", from, valueStart), FRAME_MARK + frames.length);
    frames.push(Buffer.from(value));
    from = close;
  }
  text.push(line.toString("utf8", from));
  const request = JSON.parse(text.join(""));
  if (frames.length) Object.defineProperty(request, FRAMES, { value: frames });
  return request;
}

// ---------------------------------------------------------------------------------------------
// What an evaluator sees of a frame. Nothing is decoded until asked: a base64 decode costs ~1 ms
// and an RGB decode a few ms per 720p frame, which an adapter that forwards the PNG never needs.

class SampleImage {
  #base64;
  #shared; // { frame, reader, request } for a frame in shared memory
  #bytes;
  #rgb;

  constructor({ dataBase64, sharedFrame, channels, ...fields }, frames = [], shared = null) {
    Object.assign(this, fields); // mimeType, width, height
    if (sharedFrame !== undefined) {
      if (shared?.reader == null) throw new Error("a shared frame arrived, but no shared-frames segment was set up");
      this.mimeType = "image/png";
      this.#shared = { frame: sharedFrame, ...shared };
      return;
    }
    this.#base64 =
      typeof dataBase64 === "string" && dataBase64.startsWith(FRAME_MARK)
        ? frames[Number(dataBase64.slice(FRAME_MARK.length))]
        : dataBase64;
  }

  /** The PNG file. */
  get bytes() {
    if (this.#bytes === undefined) {
      if (this.#shared !== undefined) {
        this.#bytes = encodePng(this.width, this.height, this.rgb);
        return this.#bytes;
      }
      const text = typeof this.#base64 === "string" ? this.#base64 : this.#base64.toString("latin1");
      this.#bytes = Buffer.from(text, "base64");
      this.#base64 = undefined;
    }
    return this.#bytes;
  }

  /** The pixels, row-major, 3 bytes (R, G, B) each: pixel (x, y) starts at (y * width + x) * 3. */
  get rgb() {
    if (this.#rgb === undefined) {
      if (this.#shared !== undefined) {
        const { frame, reader, request } = this.#shared;
        if (request.answered) {
          throw new Error(
            "this frame came through shared memory and its slot was handed back when its request was answered: " +
              "read sample.image.rgb (or .bytes) before evaluate returns",
          );
        }
        if (frame.length !== this.width * this.height * RGB_BYTES) {
          throw new Error(`shared frame is ${frame.length} bytes, the request says ${this.width}x${this.height}`);
        }
        this.#rgb = reader.read(frame);
        this.#shared = undefined;
        return this.#rgb;
      }
      const decoded = decodePng(this.bytes);
      if (decoded.width !== this.width || decoded.height !== this.height) {
        throw new Error(`frame PNG is ${decoded.width}x${decoded.height}, the request says ${this.width}x${this.height}`);
      }
      this.#rgb = decoded.rgb;
    }
    return this.#rgb;
  }

  toJSON() {
    return { mimeType: this.mimeType, width: this.width, height: this.height };
  }
}

const withImage = (frames, shared) => (sample) => ({ ...sample, image: new SampleImage(sample.image, frames, shared) });

// ---------------------------------------------------------------------------------------------
// The protocol loop.

// JSON.stringify writes NaN and Infinity as null: an answer holding one would reach assay as a null
// observation, a wrong answer that looks like a right one.
function finiteNumbers(key, value) {
  if (typeof value === "number" && !Number.isFinite(value)) {
    throw new Error(`${value} ${key === "result" ? "as the result" : `at key '${key}'`} is not a JSON number`);
  }
  return value;
}

// stdout carries protocol messages only; a stray console.log would break the stream.
function sendConsoleToStderr() {
  for (const name of ["log", "info", "debug"]) console[name] = console.error;
}

export async function runAdapter(createEvaluator) {
  sendConsoleToStderr();
  const active = new Map();
  let evaluator = null;
  let sharedFrames = null;
  let closed = false;
  let writes = Promise.resolve();

  const send = (message) => sendLine(JSON.stringify(message) + "\n");
  const sendLine = (line) => {
    writes = writes.then(
      () => new Promise((resolve, reject) =>
        process.stdout.write(line, (error) => (error ? reject(error) : resolve()))),
    );
    return writes;
  };

  const describe = (error) => ({ message: error instanceof Error ? error.message : String(error) });

  const answer = async (id, work) => {
    let reply;
    try {
      reply = { id, result: await work() };
    } catch (error) {
      reply = { id, error: describe(error) };
    }
    // A function or undefined has no JSON form; null says "no observation" plainly.
    if ("result" in reply && reply.result === undefined) reply.result = null;
    let line;
    try {
      line = JSON.stringify(reply, finiteNumbers) + "\n";
    } catch (error) {
      // A BigInt, a cycle or NaN is this request's error, not a crash of the adapter (nor a silent null).
      const reason = String(error.message).split("\n")[0];
      line = JSON.stringify({ id, error: { message: `the answer cannot be sent as JSON: ${reason}` } }) + "\n";
    }
    await sendLine(line);
  };

  const finishEvaluator = async () => {
    const current = evaluator;
    evaluator = null;
    sharedFrames?.close();
    sharedFrames = null;
    if (current && typeof current.close === "function") await current.close();
  };

  const reader = chunkReader(process.stdin);
  const incoming = requestsFrom(reader);
  for (;;) {
    let request;
    try {
      const next = await incoming.next();
      if (next.done) break;
      request = next.value;
    } catch (error) {
      console.error(error instanceof SyntaxError ? "malformed protocol request:" : "cannot read requests:", error.message);
      process.exitCode = 1;
      break;
    }
    const { id, method, params } = request;
    if (method === "cancel") {
      active.get(params?.id)?.abort();
    } else if (method === "initialize") {
      await answer(id, async () => {
        if (params.protocolVersion !== 1) throw new Error(`unsupported protocol version: ${params.protocolVersion}`);
        evaluator = await createEvaluator(params.config);
        const capabilities = {
          evaluate: typeof evaluator?.evaluate === "function",
          evaluateMany: typeof evaluator?.evaluateMany === "function",
        };
        if (!capabilities.evaluate && !capabilities.evaluateMany) {
          throw new Error("adapter must implement evaluate or evaluateMany");
        }
        // assay then offers a shared-memory segment (a GlassKit host ignores the key).
        return { protocolVersion: 1, capabilities: { ...capabilities, [SHARED_FRAMES]: true } };
      });
    } else if (method === SHARED_FRAMES) {
      await answer(id, async () => {
        sharedFrames?.close();
        sharedFrames = null;
        sharedFrames = new SharedFrames(params ?? {});
        return { version: 1 };
      });
    } else if (method === "evaluate" || method === "evaluateMany") {
      const controller = new AbortController();
      const inFlight = { answered: false };
      const images = withImage(request[FRAMES], { reader: sharedFrames, request: inFlight });
      const work = answer(id, async () => {
        if (!evaluator) throw new Error("adapter is not initialized");
        const { target } = params;
        try {
          if (method === "evaluate") {
            return await evaluator.evaluate({ sample: images(params.sample), target, signal: controller.signal });
          }
          return await evaluator.evaluateMany({ samples: params.samples.map(images), target, signal: controller.signal });
        } finally {
          inFlight.answered = true; // the answer hands the frames' slots back to assay
        }
      });
      active.set(id, controller);
      controller.done = work.finally(() => active.delete(id));
    } else if (method === "close") {
      closed = true;
      await Promise.allSettled([...active.values()].map((controller) => controller.done));
      await answer(id, async () => {
        await finishEvaluator();
        return null;
      });
      break;
    } else {
      await send({ id, error: { message: `unknown method: ${method}` } });
    }
  }
  if (!closed) {
    // stdin ended without `close`: the host is gone, so stop what is running and clean up.
    for (const controller of active.values()) controller.abort();
    await Promise.allSettled([...active.values()].map((controller) => controller.done));
    await finishEvaluator();
  }
  reader.stop();
  await writes;
}
