// lithe for JavaScript: the idiomatic layer over the C API (raw.js). Models and optimizers hold C
// objects: call dispose() when done (a FinalizationRegistry frees forgotten ones eventually);
// a handle used after dispose() throws a LitheError (LITHE_ERR_STATE), never reaches C.
// Tensors are plain JS: a TypedArray and a shape, copied into the module for each call, so no JS
// object points into a model's memory. Threads: every call runs on the thread that called it, to
// completion (the API is synchronous); the threads module's workers only run kernels inside a
// call, never calls of their own, so two calls on one model cannot overlap.
// Integer arguments are checked here (a LitheError, LITHE_ERR_INVALID_ARG) before they reach
// WebAssembly, where a number is cut to 32 or 64 bits without a word.
import { instantiate, simdSupported, relaxedSimdSupported, threadsSupported, readBytes, compileImporters, compileImportersSync, linkImporters } from './loader.js';
import { createRaw, LitheError, litheError, STATUS, DTYPE } from './raw.js';

export { LitheError, STATUS, DTYPE, simdSupported, relaxedSimdSupported, threadsSupported };

let raw = null;
let initPromise = null;
let loadedCore = null;
let importersSource; // options.importers
let importersPromise = null;

// Loads and starts the WebAssembly module once (later calls return the same promise).
// options.simd: true / false forces a build (default: feature detection); options.wasm: the .wasm
// as bytes, URL, path or WebAssembly.Module (default: the package's own file for the build);
// options.print(fd, line): where C's stdout/stderr lines go (default: console).
// options.threads: threads in all (default min(4, ceil(cores / 2))); more than one loads the threads
// module and starts threads - 1 workers where shared memory is allowed (Node; a cross-origin
// isolated page or worker), else one thread, silently. options.relaxed: false refuses (true
// forces where valid) the relaxed-SIMD module, which one thread loads where the engine has relaxed
// SIMD (Chromium; not Node 20). Resolves with { simd, threads, build, version }: build is
// 'simd-threads', 'relaxed-simd', 'simd' or 'scalar', threads the number computing.
// options.threadUrl: where src/thread.js (the workers' script) is served, if a bundler moved it.
// options.importers: where the importer module (ONNX, TF.js: lithe-importers.wasm, or
// lithe-importers-simd.wasm for the SIMD128 build) is, as bytes, URL, path or WebAssembly.Module,
// linked when a model first needs it (default: the package's own file for the build); or true to
// link the package's own now. (The threads module has them built in.)
// options.device: 'cpu' (the default) or 'webgpu': then WebGPU is asked for an adapter
// (options.gpu: navigator.gpu by default; in Node, e.g. the webgpu package's create([])) and, when
// one answers, the WebGPU module (dist/lithe-webgpu.wasm, or options.wasm) is loaded instead of the
// CPU one, with src/webgpu.js's command recorder; models then go to the GPU with model.to('webgpu')
// and their predictAsync / trainStepAsync are promises (a read-back waits for the GPU). Without an
// adapter it falls back to the CPU module: the result's device is then 'cpu' and deviceReason says why.
export function init(options = {}) {
  initPromise ??= startModule(options).then(async ({ loaded, gpu }) => {
    loadedCore = loaded;
    raw = createRaw(loaded);
    webgpu = gpu;
    if (gpu) gpu.asyncify.attach(loaded.instance, loaded.exports.malloc);
    raw.importers = raw.lithe_js_importers_linked() ? 'built in' : null;
    importersSource = options.importers === true ? undefined : options.importers;
    if (options.importers === true) await importers();
    return { simd: loaded.simd, threads: loaded.threads, build: loaded.build, version: raw.cstring(raw.lithe_version()),
             device: gpu ? 'webgpu' : 'cpu', deviceReason: gpu ? null : deviceReason };
  }).catch((err) => {
    // a failed start (the module, or the importer module asked for) may be retried: another URL, say
    initPromise = null;
    raw = null;
    loadedCore = null;
    throw asLitheError(err, 'cannot start the WebAssembly module');
  });
  return initPromise;
}

// The module for options.device: the WebGPU one where an adapter answers, else the CPU one (with
// deviceReason set).
let webgpu = null; // { asyncify, wg: the recorder, stats } when the WebGPU module runs
let deviceReason = null;
async function startModule(options) {
  deviceReason = null;
  if ((options.device ?? 'cpu') === 'cpu') return { loaded: await instantiate(options), gpu: null };
  if (options.device !== 'webgpu') throw litheError(STATUS.VALUE, `unknown device '${options.device}' ('cpu' or 'webgpu')`);
  const { requestDevice, webgpuImports, Asyncify } = await import('./webgpu.js');
  const found = await requestDevice(options.gpu);
  if (!found.device) {
    deviceReason = found.reason;
    return { loaded: await instantiate({ ...options, device: 'cpu' }), gpu: null };
  }
  const asyncify = new Asyncify();
  let wg = null;
  const loaded = await instantiate({
    ...options,
    threads: 1,
    relaxed: false, // the WebGPU module is a SIMD128 build
    wasm: options.wasm ?? new URL('../dist/lithe-webgpu.wasm', import.meta.url),
    extraImports: (getMemory) => {
      wg = webgpuImports(found.device, () => getMemory() ?? loadedMemory(), asyncify, found.info);
      return wg.imports;
    },
  });
  loadedWgMemory = loaded.memory;
  return { loaded, gpu: { asyncify, wg, stats: wg.stats, info: found.info } };
}
let loadedWgMemory = null;
const loadedMemory = () => loadedWgMemory;

// The device the module computes on: { device: 'webgpu' | 'cpu', reason (why not WebGPU, when it was
// asked for), adapter info, and the WebGPU recorder's counters (dispatches, submits, read-backs) }.
export function device() {
  need();
  return webgpu ? { device: 'webgpu', reason: null, info: webgpu.info, stats: { ...webgpu.stats } }
    : { device: 'cpu', reason: deviceReason, info: null, stats: null };
}

// A host tensor moved to backend be (the host one released); resolves with the device copy.
async function toDevice(ptr, be) {
  const r = need();
  try {
    r.check(await callAsync('lithe_tensor_to_backend', ptr, be, r.outPtr(2)));
    return r.readU32(r.outPtr(2));
  } finally {
    r.lithe_tensor_release(ptr);
  }
}

// Runs export `name` of the module, awaiting the WebGPU read-backs it makes (Asyncify); a plain
// call on the CPU module.
function callAsync(name, ...args) {
  const r = need();
  return webgpu ? webgpu.asyncify.call(name, ...args) : Promise.resolve(r[name](...args));
}
// which importer module the running core links: its own build's (the relaxed-SIMD core's
// convolution fuses too), the SIMD128 one, or the scalar one
const importersFlavour = () => (loadedCore.build === 'relaxed-simd' ? 'relaxed' : loadedCore.simd);

// ONNX and TF.js models (and .lithe files holding one) run code that lives in a second module,
// lithe-importers.wasm, linked into the running one the first time a model needs it: load() does
// that on its own; the synchronous loadBytes / loadTfjs do it in Node, and elsewhere need it linked
// already (by an earlier load() or init({ importers: true })).
function importers() {
  if (raw.importers) return Promise.resolve();
  importersPromise ??= compileImporters(importersSource, importersFlavour()).then(
    (module) => {
      if (!raw.importers) raw.importers = linkImporters(loadedCore, module);
    },
    (err) => {
      importersPromise = null;
      throw asLitheError(err, 'cannot load the importer module (ONNX, TF.js)');
    });
  return importersPromise;
}

// Runs call(), a loader returning a status. When it fails for want of the importer module: with
// `sync`, links the module where that can be done synchronously and runs call() again; without,
// returns MISSING (the caller awaits importers() and retries).
const MISSING = Symbol('missing importers');
function runLoader(call, sync) {
  const r = need();
  if (r.importers) return call();
  r.lithe_js_importers_wanted(); // clears the flag
  const status = call();
  if (status === STATUS.OK || !r.lithe_js_importers_wanted()) return status;
  if (!sync) return MISSING;
  try {
    const module = compileImportersSync(importersSource, importersFlavour());
    if (!module) return status; // lithe's error says what is missing and that load() links it
    r.importers = linkImporters(loadedCore, module);
  } catch (err) {
    throw asLitheError(err, 'cannot load the importer module (ONNX, TF.js)');
  }
  return call();
}

function need() {
  if (!raw) throw litheError(STATUS.STATE, 'call `await lithe.init()` first');
  return raw;
}

// Errors from below this layer (the file system, fetch, WebAssembly compilation) as LitheErrors:
// IO for files and the network, FORMAT for a module that does not compile, else INTERNAL.
function asLitheError(err, what) {
  if (err instanceof LitheError) return err;
  const io = typeof err?.code === 'string' || err instanceof TypeError; // Node's ENOENT & co.; fetch's network failure
  const status = io ? STATUS.IO : err instanceof WebAssembly.CompileError ? STATUS.FORMAT : STATUS.INTERNAL;
  return litheError(status, `${what}: ${err?.message ?? err}`, err);
}

// The C-mirror layer (every lithe_* function by its C name, memory helpers, check()).
export function c() {
  return need();
}
export function version() {
  return need().cstring(raw.lithe_version());
}
export function usingSimd() {
  return need().simd;
}
// Threads the CPU backend computes with (1 unless the threads module runs with workers).
export function threads() {
  return need().threads;
}

const INT32_MAX = 2 ** 31 - 1;

// An integer argument in [min, max] (a number; a BigInt too where max is one), else a
// LitheError naming the function and the argument.
function intArg(fn, name, v, min, max) {
  const ok = typeof v === 'bigint' ? typeof max === 'bigint' && v >= BigInt(min) && v <= max
    : Number.isSafeInteger(v) && v >= min && v <= max;
  if (!ok) {
    throw litheError(STATUS.INVALID_ARG,
      `${fn}: ${name} must be an integer in [${min}, ${max}], got ${typeof v === 'bigint' ? `${v}n` : String(v)}`);
  }
  return v;
}

const ARRAY_OF_DTYPE = {
  [DTYPE.F32]: Float32Array, [DTYPE.I32]: Int32Array, [DTYPE.I64]: BigInt64Array, [DTYPE.U64]: BigUint64Array,
  [DTYPE.U8]: Uint8Array, [DTYPE.U32]: Uint32Array,
};
function dtypeOf(data) {
  if (data instanceof Float32Array) return DTYPE.F32;
  if (data instanceof Int32Array) return DTYPE.I32;
  if (data instanceof BigInt64Array) return DTYPE.I64;
  if (data instanceof BigUint64Array) return DTYPE.U64;
  if (data instanceof Uint8Array) return DTYPE.U8;
  if (data instanceof Uint32Array) return DTYPE.U32;
  throw litheError(STATUS.DTYPE, 'tensor data must be a Float32Array, Int32Array, BigInt64Array, BigUint64Array, Uint8Array or Uint32Array');
}

// An n-dimensional array: `data` (a TypedArray, row-major) and `shape` (extents).
// (a copy out of the module passes FROM_C: its data, extents and dtype are lithe's own, so the checks
// are skipped; the symbol is private to this file)
const FROM_C = Symbol('lithe: from C');
export class Tensor {
  constructor(data, shape = [data.length], dtype = undefined, from = undefined) {
    if (from === FROM_C) {
      this.data = data;
      this.shape = shape;
      this.dtype = dtype;
      return;
    }
    dtype = dtypeOf(data);
    shape = Array.from(shape, Number);
    // extents travel to C as int32: a larger one would arrive cut to its low bits
    if (shape.some((d) => !Number.isInteger(d) || d < 0 || d > INT32_MAX)) throw litheError(STATUS.SHAPE, `bad shape [${shape}] (extents are integers in [0, ${INT32_MAX}])`);
    const n = shape.reduce((a, b) => a * b, 1);
    if (n !== data.length) throw litheError(STATUS.SHAPE, `shape [${shape}] holds ${n} elements but data has ${data.length}`);
    this.data = data;
    this.shape = shape;
    this.dtype = dtype;
  }
  get size() {
    return this.data.length;
  }
  // Index of the largest value in each row of a 2-D tensor (the predicted class).
  argmax() {
    const [rows, cols] = this.shape.length === 2 ? this.shape : [1, this.data.length];
    const out = new Int32Array(rows);
    for (let r = 0; r < rows; r++) {
      let best = 0;
      for (let j = 1; j < cols; j++) if (this.data[r * cols + j] > this.data[r * cols + best]) best = j;
      out[r] = best;
    }
    return out;
  }
}

export function tensor(data, shape) {
  if (Array.isArray(data)) data = Float32Array.from(data);
  return new Tensor(data, shape);
}

function asTensor(x, shape) {
  if (x instanceof Tensor) return x;
  if (x && ArrayBuffer.isView(x.data) && x.shape) return new Tensor(x.data, x.shape);
  if (ArrayBuffer.isView(x)) return new Tensor(x, shape ?? [x.length]);
  if (Array.isArray(x)) return tensor(x, shape);
  throw litheError(STATUS.INVALID_ARG, 'expected a lithe.Tensor, {data, shape} or a TypedArray');
}

// A tensor's extents (and, read back, its dtype and rank; predict's output and its data's address
// before them) pass through the scratch block's slots 16 and on (raw.js), not a malloc'd block: a predict at batch 1 is some tens of microseconds, and
// each malloc / free is a call into the module.
const DESC_SLOT = 16, SHAPE_SLOTS = 40;

// A new C tensor holding a copy of t (release with lithe_tensor_release).
function toC(t) {
  const r = need();
  const nd = t.shape.length;
  const inScratch = nd <= SHAPE_SLOTS;
  const shapePtr = inScratch ? r.outPtr(DESC_SLOT) : r.malloc(4 * nd);
  try {
    const i32 = r.i32(), w = shapePtr >>> 2;
    for (let i = 0; i < nd; i++) i32[w + i] = t.shape[i];
    r.check(r.lithe_js_tensor_new(t.dtype, nd, shapePtr, r.outPtr(0)));
  } finally {
    if (!inScratch) r.free(shapePtr);
  }
  const ptr = r.readU32(r.outPtr(0));
  if (t.data.byteLength) {
    const dst = r.lithe_tensor_data(ptr);
    if (t.dtype === DTYPE.F32 && dst % 4 === 0) r.f32().set(t.data, dst >>> 2); // (no view to make)
    else r.u8().set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), dst);
  }
  return ptr;
}

// A JS copy of a C tensor: its dtype, extents and (when contiguous on the host) data address in one
// call (lithe_js_tensor_desc), the data copied straight out of the module's memory into a new
// TypedArray (small ones live on V8's heap: no ArrayBuffer is made unless .buffer is asked for).
function fromC(ptr) {
  const r = need();
  const d = r.outPtr(DESC_SLOT);
  return fromDesc(r, ptr, r.lithe_js_tensor_desc(ptr, d), d);
}
// (the copy, from a description at d: dtype, ndim, extents; `at` the data's address or 0)
function fromDesc(r, ptr, at, d) {
  const i32 = r.i32(), w = d >>> 2;
  const dtype = i32[w], ndim = i32[w + 1];
  const shape = new Array(ndim);
  let n = 1;
  for (let i = 0; i < ndim; i++) n *= shape[i] = i32[w + 2 + i];
  const Ctor = ARRAY_OF_DTYPE[dtype];
  if (!Ctor) throw litheError(STATUS.DTYPE, `no TypedArray for dtype ${dtype}`);
  const out = new Ctor(n);
  const nbytes = n * Ctor.BYTES_PER_ELEMENT;
  if (nbytes && at && dtype === DTYPE.F32 && n <= 64 && at % 4 === 0) {
    const f32 = r.f32(), w0 = at >>> 2; // a few scores: a loop, no view to make
    for (let i = 0; i < n; i++) out[i] = f32[w0 + i];
  } else if (nbytes && at && at % Ctor.BYTES_PER_ELEMENT === 0) {
    out.set(new Ctor(r.memory.buffer, at, n));
  } else if (nbytes) {
    const tmp = r.malloc(nbytes);
    if (!tmp) throw litheError(STATUS.OOM, `malloc(${nbytes}) failed`);
    try {
      r.check(r.lithe_tensor_read(ptr, tmp, nbytes));
      new Uint8Array(out.buffer).set(r.u8().subarray(tmp, tmp + nbytes));
    } finally {
      r.free(tmp);
    }
  }
  return new Tensor(out, shape, dtype, FROM_C);
}

// predict's input tensor, kept from one call to the next (any model's): at batch 1 a new C tensor
// per call (its mallocs, frees and two more calls into the module) was a measurable part of a
// predict. Reused when the next input has the same dtype and extents and nothing in the module
// holds it any more (lithe_js_tensor_reuse: a model that kept it, or a view of it, keeps its data;
// then a new one is made). Inputs over INPUT_KEEP_BYTES are released after each call instead, so
// the module never holds more than that for it.
const INPUT_KEEP_BYTES = 1 << 20;
let keptInput = 0, keptDtype = -1, keptShape = [];
function sameShape(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
// A C tensor holding t's values: the kept one, refilled, when it fits, else a new one (toC).
function inputC(r, t) {
  if (keptInput && t.dtype === keptDtype && sameShape(t.shape, keptShape)) {
    const at = r.lithe_js_tensor_reuse(keptInput);
    if (at) {
      if (t.dtype === DTYPE.F32 && at % 4 === 0) r.f32().set(t.data, at >>> 2);
      else if (t.data.byteLength) r.u8().set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
      return keptInput;
    }
  }
  return toC(t);
}
// After the call: keep xp for the next one (releasing the one kept before), or release it.
function inputDone(r, xp, t) {
  if (xp === keptInput) return;
  if (t.data.byteLength > INPUT_KEEP_BYTES) return void r.lithe_tensor_release(xp);
  if (keptInput) r.lithe_tensor_release(keptInput);
  keptInput = xp;
  keptDtype = t.dtype;
  keptShape = t.shape.slice();
}

const registry = new FinalizationRegistry(({ free, ptr }) => {
  if (raw) raw[free](ptr);
});

class Handle {
  #ptr;
  #free;
  constructor(ptr, free) {
    this.#ptr = ptr;
    this.#free = free;
    registry.register(this, { free, ptr }, this);
  }
  get ptr() {
    if (!this.#ptr) throw litheError(STATUS.STATE, `${this.constructor.name} used after dispose()`);
    return this.#ptr;
  }
  get disposed() {
    return !this.#ptr;
  }
  // Frees the C object now. Safe to call twice.
  dispose() {
    if (!this.#ptr) return;
    registry.unregister(this);
    need()[this.#free](this.#ptr);
    this.#ptr = 0;
  }
  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.dispose();
  }
}

// Thinc's Optimizer: Adam (with Thinc's defaults) or SGD.
export class Optimizer extends Handle {}

function optimizer(adam, o) {
  const r = need();
  const d = { learnRate: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8, L2: 0, gradClip: 1.0, useAverages: adam, ...o };
  r.check(r.lithe_js_optimizer_new(adam ? 1 : 0, d.learnRate, d.beta1, d.beta2, d.eps, d.L2, d.gradClip,
    d.useAverages ? 1 : 0, r.outPtr(0)));
  return new Optimizer(r.readU32(r.outPtr(0)), 'lithe_optimizer_free');
}
// Adam; options as Thinc's Adam: learnRate (0.001), beta1, beta2, eps, L2, gradClip (1.0),
// useAverages (true).
export const adam = (options = {}) => optimizer(true, options);
// SGD; options: learnRate (required), L2, gradClip (1.0), useAverages (false).
export function sgd(options) {
  if (!options || typeof options.learnRate !== 'number') throw litheError(STATUS.INVALID_ARG, 'sgd: options.learnRate is required');
  return optimizer(false, options);
}

const LOSSES = { categorical_crossentropy: 0, cce: 0, l2: 1, mse: 1 };

export class Model extends Handle {
  #prepared = false; // the weights' prepared copies are current (see predict)
  #device = 'cpu'; // where to() put the weights
  #backend = 0; // its lithe_backend
  // Thinc's model.name ("relu>>dropout>>relu>>dropout>>softmax").
  get name() {
    return need().cstring(raw.lithe_model_name(this.ptr));
  }
  // Seeds the tree (node k in walk order gets seed + k): dropout masks, and so training, repeat
  // exactly — the same as native lithe with the same seed.
  setSeed(seed) {
    intArg('setSeed', 'seed', seed, 0, 2n ** 64n - 1n);
    need().check(raw.lithe_model_set_seed(this.ptr, BigInt.asIntN(64, BigInt(seed))));
    return this;
  }
  // predict(X) (forward with is_train = false): a Tensor, or a TypedArray and its shape. The
  // weights are prepared for inference on the first call (lithe_model_prepare_inference: packed
  // once for the GEMM) and again after trainStep / resizeOutput changed them (lithe drops the
  // copies it would otherwise read stale); this layer never hands out the weights' memory, so no
  // write can get past lithe. Same bits as unprepared.
  predict(x, shape) {
    const r = need();
    if (this.#device !== 'cpu') throw litheError(STATUS.UNSUPPORTED, `this model is on ${this.#device}: its predictions come back asynchronously (await model.predictAsync(x))`);
    const t = asTensor(x, shape);
    const xp = inputC(r, t);
    try {
      if (!this.#prepared) {
        // out of memory leaves the model working unprepared (lithe.h): predict goes on without
        // the packed copies and tries again next time
        const s = r.lithe_model_prepare_inference(this.ptr);
        if (s !== STATUS.OOM) r.check(s);
        this.#prepared = s === STATUS.OK;
      }
      // the output and its description in one call (lithe_js_predict): y, its data, dtype, extents
      const d = r.outPtr(DESC_SLOT);
      r.check(r.lithe_js_predict(this.ptr, xp, d));
      const i32 = r.i32(), yp = i32[d >>> 2] >>> 0;
      try {
        return fromDesc(r, yp, i32[(d >>> 2) + 1] >>> 0, d + 8);
      } finally {
        r.lithe_tensor_release(yp);
      }
    } finally {
      inputDone(r, xp, t);
    }
  }
  // One update: begin_update(x), the loss against y, backprop, finish_update(optimizer). loss:
  // 'categorical_crossentropy' (y: Int32Array labels (B,) or Float32Array targets (B, C)) or 'l2'
  // (Thinc's L2Distance: targets of the output's shape, sequences (B, T, N) too). Returns the loss
  // of the output before the update, as PyTorch and tfjs report it: the mean cross-entropy, or the
  // mean squared error; with report: 'thinc', Thinc 8.1's figure (the sum of the squared gradient).
  // Computed by the C library (lithe_cross_entropy, lithe_mean_squared_error).
  trainStep({ x, y, loss = 'categorical_crossentropy', optimizer: opt, report = 'loss' }) {
    const r = need();
    if (this.#device !== 'cpu') throw litheError(STATUS.UNSUPPORTED, `this model is on ${this.#device}: its loss comes back asynchronously (await model.trainStepAsync(...))`);
    if (!(opt instanceof Optimizer)) throw litheError(STATUS.INVALID_ARG, 'trainStep needs an optimizer (lithe.adam() or lithe.sgd())');
    const kind = LOSSES[loss];
    if (kind === undefined) throw litheError(STATUS.VALUE, `unknown loss '${loss}' (categorical_crossentropy or l2)`);
    if (report !== 'loss' && report !== 'thinc') throw litheError(STATUS.VALUE, `unknown report '${report}' ('loss' or 'thinc')`);
    const xs = asTensor(x);
    let ys = y;
    if (Array.isArray(y)) {
      y.forEach((v, i) => intArg('trainStep', `y[${i}]`, v, -(2 ** 31), INT32_MAX)); // labels: int32
      ys = new Tensor(Int32Array.from(y));
    }
    const xp = toC(xs);
    let yp = 0;
    try {
      yp = toC(asTensor(ys));
      this.#prepared = false; // the step writes the weights: lithe drops their prepared copies
      r.check(r.lithe_js_train_step(this.ptr, opt.ptr, xp, yp, kind, report === 'thinc' ? 1 : 0, r.outPtr(1), 0));
      return r.readF32(r.outPtr(1));
    } finally {
      r.lithe_tensor_release(xp);
      r.lithe_tensor_release(yp);
    }
  }
  // Moves the model's weights to a device: 'webgpu' (the module init({ device: 'webgpu' }) loaded)
  // or 'cpu'. Resolves with the model.
  async to(dev) {
    const r = need();
    if (dev !== 'cpu' && dev !== 'webgpu') throw litheError(STATUS.VALUE, `unknown device '${dev}' ('cpu' or 'webgpu')`);
    if (dev === 'webgpu' && !webgpu) throw litheError(STATUS.UNSUPPORTED, `no WebGPU here: ${deviceReason ?? "init({ device: 'webgpu' }) loads it"}`);
    const name = r.malloc(8);
    try {
      r.u8().set(new TextEncoder().encode(`${dev}\0`), name);
      r.check(r.lithe_backend_get(name, r.outPtr(0)));
    } finally {
      r.free(name);
    }
    this.#prepared = false;
    this.#backend = r.readU32(r.outPtr(0));
    r.check(await callAsync('lithe_model_to_backend', this.ptr, this.#backend));
    this.#device = dev;
    return this;
  }
  // predict as a promise: on WebGPU the input goes up, the forward pass is recorded and submitted
  // once, and the output comes back by one read-back; on the CPU the same as predict.
  async predictAsync(x, shape) {
    const r = need();
    if (this.#device === 'cpu') return this.predict(x, shape);
    const xp = await toDevice(toC(asTensor(x, shape)), this.#backend);
    let yp = 0;
    try {
      r.check(await callAsync('lithe_model_predict_tensor', this.ptr, xp, r.outPtr(0)));
      yp = r.readU32(r.outPtr(0));
      r.check(await callAsync('lithe_tensor_to_backend', yp, 0, r.outPtr(0)));
      const host = r.readU32(r.outPtr(0));
      try {
        return fromC(host);
      } finally {
        r.lithe_tensor_release(host);
      }
    } finally {
      r.lithe_tensor_release(xp);
      if (yp) r.lithe_tensor_release(yp);
    }
  }
  // trainStep as a promise (the loss is a read-back on WebGPU); options as trainStep's.
  async trainStepAsync({ x, y, loss = 'categorical_crossentropy', optimizer: opt, report = 'loss' }) {
    const r = need();
    if (this.#device === 'cpu') return this.trainStep({ x, y, loss, optimizer: opt, report });
    if (!(opt instanceof Optimizer)) throw litheError(STATUS.INVALID_ARG, 'trainStepAsync needs an optimizer (lithe.adam() or lithe.sgd())');
    const kind = LOSSES[loss];
    if (kind === undefined) throw litheError(STATUS.VALUE, `unknown loss '${loss}' (categorical_crossentropy or l2)`);
    const ys = asTensor(Array.isArray(y) ? new Tensor(Int32Array.from(y)) : y);
    if (kind === 0 && (ys.dtype === DTYPE.I32 || ys.dtype === DTYPE.I64)) {
      // int labels: checked on the host before they go up; the forward pass and the loss in one
      // submit with one read-back (the loss and the guesses' range check together), the backward
      // pass and the update in a second submit (lithe_js_train_step_once)
      const xh = toC(asTensor(x));
      let yh = 0;
      try {
        yh = toC(ys);
        this.#prepared = false;
        r.check(await callAsync('lithe_js_train_step_once', this.ptr, opt.ptr, this.#backend, xh, yh, report === 'thinc' ? 1 : 0, r.outPtr(1)));
        return r.readF32(r.outPtr(1));
      } finally {
        r.lithe_tensor_release(xh);
        if (yh) r.lithe_tensor_release(yh);
      }
    }
    const xp = await toDevice(toC(asTensor(x)), this.#backend);
    let yp = 0;
    try {
      yp = await toDevice(toC(asTensor(ys)), this.#backend);
      this.#prepared = false;
      r.check(await callAsync('lithe_js_train_step', this.ptr, opt.ptr, xp, yp, kind, report === 'thinc' ? 1 : 0, r.outPtr(1), 0));
      return r.readF32(r.outPtr(1));
    } finally {
      r.lithe_tensor_release(xp);
      r.lithe_tensor_release(yp);
    }
  }
  // Grows the output layer to n classes, keeping what it learned for the old ones (Thinc's
  // resize_model: new rows start at zero). The output layer is wrapped in a resizable node the
  // first time.
  resizeOutput(n) {
    intArg('resizeOutput', 'n', n, 1, INT32_MAX); // (2 ** 32 + 5 would arrive in C as 5)
    this.#prepared = false;
    need().check(raw.lithe_js_resize_output(this.ptr, n));
    return this;
  }
  // Fine-tuning on a memory budget (docs/training.md): freeze(pattern) freezes (frozen = false:
  // thaws) the params whose name — an imported graph's ONNX initializer names, or "node/param" —
  // matches the glob ('*', '?'); freeze() with no pattern the whole model. Frozen params get no
  // gradient buffer and no optimizer state. Returns how many params matched (lithe_model_freeze_matching).
  freeze(pattern = undefined, frozen = true) {
    const r = need();
    if (pattern === undefined) {
      r.check(raw.lithe_model_set_frozen(this.ptr, 0, frozen ? 1 : 0));
      return -1;
    }
    if (typeof pattern !== 'string') throw litheError(STATUS.INVALID_ARG, 'freeze: pattern must be a string');
    const ps = r.allocString(pattern);
    try {
      r.check(raw.lithe_model_freeze_matching(this.ptr, ps, frozen ? 1 : 0, r.outPtr(2)));
      return r.readU32(r.outPtr(2));
    } finally {
      r.free(ps);
    }
  }
  isFrozen(param) {
    const r = need();
    const ps = r.allocString(param);
    try {
      return raw.lithe_model_is_frozen(this.ptr, ps) !== 0;
    } finally {
      r.free(ps);
    }
  }
  // Recomputation, trading time for memory (docs/training.md): a chain keeps only its input and
  // runs its layers' forward again in backprop; an imported graph keeps only the values crossing
  // its segments' boundaries (segments > 0: that many; 0: chosen by bytes), and with rows > 0 runs
  // each row-wise segment's backward `rows` rows of the batch at a time. Gradients are identical
  // (by rows: to the rounding of summing the weights' gradients in parts). Saved with the model
  // (the attrs "recompute", "recompute_segments", "recompute_rows").
  setRecompute(on = true, { segments = 0, rows = 0 } = {}) {
    intArg('setRecompute', 'segments', segments, 0, INT32_MAX);
    intArg('setRecompute', 'rows', rows, 0, INT32_MAX);
    const r = need();
    const a = r.allocString('recompute'), b = r.allocString('recompute_segments'), c = r.allocString('recompute_rows');
    try {
      r.check(raw.lithe_model_set_attr_bool(this.ptr, a, on ? 1 : 0));
      if (segments) r.check(raw.lithe_model_set_attr_int(this.ptr, b, BigInt(segments)));
      if (rows) r.check(raw.lithe_model_set_attr_int(this.ptr, c, BigInt(rows)));
    } finally {
      r.free(a);
      r.free(b);
      r.free(c);
    }
    return this;
  }
  // The bytes one training step at `batch` rows needs, before running it (lithe_model_plan_train:
  // a dry run on the first one and two rows of x, extrapolated): { params, grads, optState,
  // activations, workspace, total }.
  planTrain({ x, shape = undefined, batch = 0, optimizer: opt = undefined }) {
    const r = need();
    const xp = toC(asTensor(x, shape));
    const out = r.malloc(40);
    let xv = 0;
    try {
      r.check(raw.lithe_value_tensor(xp, r.outPtr(3)));
      xv = r.readU32(r.outPtr(3));
      r.check(runLoader(() => raw.lithe_model_plan_train(this.ptr, xv, BigInt(batch), opt ? opt.ptr : 0, out), true));
      const f = (i) => r.readU32(out + 4 * i); // size_t is 32-bit in wasm32
      return { params: f(0), grads: f(1), optState: f(2), activations: f(3), workspace: f(4), total: f(5) };
    } finally {
      if (xv) raw.lithe_value_release(xv);
      r.lithe_tensor_release(xp);
      r.free(out);
    }
  }
  // A memory budget in bytes (0: none): a trainStep whose plan is over it is refused (LitheError,
  // status OOM, the message naming params / grads / optimizer state / activations) before it runs.
  setMemoryBudget(bytes, { optimizer: opt = undefined } = {}) {
    intArg('setMemoryBudget', 'bytes', bytes, 0, 2 ** 32 - 1);
    need().check(runLoader(() => raw.lithe_model_set_memory_budget(this.ptr, bytes, opt ? opt.ptr : 0), true));
    return this;
  }
  // A model loaded from TF.js (loadTfjs, or a .lithe file made from one), fine-tuned or not,
  // written back as TF.js layers format (lithe_tfjs_save_bytes): { modelJson, weights } — model.json's
  // text (the original topology, one weights group naming the shard 'group1-shard1of1.bin') and
  // that shard's bytes (every weight float32) — and TF.js's artifacts { modelTopology,
  // weightSpecs, weightData, ... } for tf.loadLayersModel(tf.io.fromMemory(artifacts)).
  saveTfjs() {
    const r = need();
    r.check(runLoader(() => r.lithe_tfjs_save_bytes(this.ptr, r.outPtr(0), r.outPtr(1), r.outPtr(2), r.outPtr(3)), true));
    const pj = r.readU32(r.outPtr(0)), nj = r.readU32(r.outPtr(1));
    const pw = r.readU32(r.outPtr(2)), nw = r.readU32(r.outPtr(3));
    const modelJson = new TextDecoder().decode(r.u8().slice(pj, pj + nj));
    const weights = r.u8().slice(pw, pw + nw);
    r.lithe_buffer_free(pj);
    r.lithe_buffer_free(pw);
    const doc = JSON.parse(modelJson);
    const { weightsManifest, ...rest } = doc;
    const artifacts = { ...rest, weightSpecs: weightsManifest.flatMap((g) => g.weights), weightData: weights.buffer };
    return { modelJson, weights, artifacts };
  }
  // Stores the dense layers' W compact (lithe_model_compress_weights, docs/format.md "Compact
  // weights"): 'int8' (per-row symmetric; computed with dynamic quantization natively, decoded in
  // the float GEMM's packing in WebAssembly), 'float16', 'bfloat16', or 'float32' (back). Biases
  // stay float32; compact weights are frozen. Returns how many weights changed; save() then
  // writes the smaller file. { match: glob } converts only the dense layers whose W matches ("W" or
  // "node/W", as freeze's patterns; lithe_model_compress_matching): the others stay float32 and train.
  compressWeights(dtype = 'int8', { match } = {}) {
    const codes = { float32: 0, float16: 1, bfloat16: 2, int8: 8 };
    if (!(dtype in codes)) throw new TypeError(`compressWeights: dtype '${dtype}' is not one of int8, float16, bfloat16, float32`);
    if (match !== undefined && typeof match !== 'string') throw new TypeError('compressWeights: match must be a string');
    const r = need();
    const ps = match === undefined ? 0 : r.allocString(match);
    try {
      // (in the importer module: linked here first if no load has linked it yet)
      r.check(runLoader(() => r.lithe_model_compress_matching(this.ptr, codes[dtype], ps, r.outPtr(0)), true));
    } finally {
      if (ps) r.free(ps);
    }
    this.#prepared = false; // new W tensors: prepare again
    return r.readU32(r.outPtr(0));
  }
  // Static int8 quantization with calibration (lithe_model_quantize_static, docs/onnx.md
  // "Static quantization"): this model run over the calibration rows x (a Float32Array with its
  // shape, as predict takes, rows along axis 0) to record each MatMul / Gemm / Conv input's range,
  // then a NEW model: the same computation as a QDQ graph (int8 per-channel weights, int8
  // activations with static scales, int32 biases: onnxruntime's QDQ format) whose dense and conv
  // nodes run on the int8 kernels. This model is unchanged. Its .quantizedNodes: how many.
  quantizeStatic(x, shape) {
    const r = need();
    const xp = toC(asTensor(x, shape));
    try {
      // (in the importer module: linked here first if no load has linked it yet)
      r.check(runLoader(() => r.lithe_model_quantize_static(this.ptr, xp, r.outPtr(1), r.outPtr(0)), true));
    } finally {
      r.lithe_tensor_release(xp);
    }
    const n = r.readU32(r.outPtr(1));
    const m = new Model(r.readU32(r.outPtr(0)), 'lithe_model_free');
    m.quantizedNodes = n;
    return m;
  }
  // LoRA adapters (lithe_model_add_lora, docs/api.md): Y = X·Wᵀ + (alpha / rank) (X·Aᵀ)·Bᵀ on every
  // dense layer's W (matched by param name, "W", or "<node name>/W") and imported graph's Gemm / MatMul / Conv weight
  // (initializer names) matching the glob `pattern` (omitted: all), the rest of the model frozen:
  // trainStep then moves only the adapters. Returns how many weights carry one.
  addLora({ pattern, rank = 8, alpha = 16, seed = 0 } = {}) {
    const r = need();
    intArg('addLora', 'rank', rank, 1, 1 << 20);
    intArg('addLora', 'seed', seed, 0, 2 ** 32 - 1);
    const pp = pattern === undefined || pattern === null ? 0 : r.allocString(String(pattern));
    try {
      this.#prepared = false;
      r.check(runLoader(() => r.lithe_js_add_lora(this.ptr, pp, rank, alpha, seed), true));
    } finally {
      if (pp) r.free(pp);
    }
    return r.lithe_model_lora_count(this.ptr);
  }
  // How many weights carry a LoRA adapter.
  get loraCount() {
    return need().lithe_model_lora_count(this.ptr);
  }
  // Merges the adapters into their weights (lithe_model_merge_lora): an ordinary model again, which
  // saves and exports (saveOnnx) as any.
  mergeLora() {
    this.#prepared = false;
    need().check(runLoader(() => raw.lithe_model_merge_lora(this.ptr), true)); // core/lora_add.c: the importers' module
    return this;
  }
  // The hash of the base weights an adapter file names (16 hex digits).
  loraBaseHash() {
    const r = need();
    const p = r.malloc(17);
    try {
      r.check(runLoader(() => r.lithe_model_lora_base_hash(this.ptr, p, 17), true));
      return r.cstring(p);
    } finally {
      r.free(p);
    }
  }
  // The adapters alone as a small .lithe file's bytes (lithe_model_save_lora_bytes).
  saveLora() {
    const r = need();
    r.check(runLoader(() => r.lithe_model_save_lora_bytes(this.ptr, r.outPtr(0), r.outPtr(1)), true));
    const p = r.readU32(r.outPtr(0)), n = r.readU32(r.outPtr(1));
    const bytes = r.u8().slice(p, p + n);
    r.lithe_buffer_free(p);
    return bytes;
  }
  // Applies adapters saved by saveLora (Uint8Array / ArrayBuffer) to this model; adapters trained
  // on another base (different weights) throw LITHE_ERR_VALUE.
  loadLora(bytes) {
    const r = need();
    const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    const p = r.allocBytes(u8);
    try {
      this.#prepared = false;
      r.check(runLoader(() => r.lithe_model_load_lora_bytes(this.ptr, p, u8.byteLength), true));
    } finally {
      r.free(p);
    }
    return this;
  }
  // The model as .lithe bytes (with the optimizer's state when one is given).
  save({ optimizer: opt } = {}) {
    const r = need();
    r.check(r.lithe_model_save_bytes(this.ptr, opt ? opt.ptr : 0, r.outPtr(0), r.outPtr(1)));
    const p = r.readU32(r.outPtr(0)), n = r.readU32(r.outPtr(1));
    const bytes = r.u8().slice(p, p + n);
    r.lithe_buffer_free(p);
    return bytes;
  }
  // The model as ONNX bytes (lithe_model_save_onnx_bytes) with its current, fine-tuned weights,
  // for onnxruntime-web / -node or Triton: an imported graph as its own graph (names, opset,
  // attributes kept), a native tree lowered to opset-17 operators (input "X", output "Y").
  // A layer without an ONNX equivalent (HashEmbed, the sequence layers) throws, naming the node.
  saveOnnx() {
    const r = need();
    // (the writers are in the importer module: linked here first if no load has linked it yet)
    r.check(runLoader(() => r.lithe_model_save_onnx_bytes(this.ptr, r.outPtr(0), r.outPtr(1)), true));
    const p = r.readU32(r.outPtr(0)), n = r.readU32(r.outPtr(1));
    const bytes = r.u8().slice(p, p + n);
    r.lithe_buffer_free(p);
    return bytes;
  }
}

// A model from .lithe or ONNX bytes (Uint8Array / ArrayBuffer), a URL or (in Node) a file path;
// ONNX bytes load as one graph node (docs/onnx.md; external-data weights need the native
// lithe_onnx_load, which reads the model's folder). Or a TF.js layers model (docs/tfjs.md) given
// as { modelJson, weights } or as TF.js's own model artifacts (what tf.io.withSaveHandler hands
// over): see loadTfjs.
export async function load(source) {
  await init();
  if (isTfjs(source)) {
    await importers();
    return loadTfjs(source);
  }
  let bytes;
  try {
    bytes = await readBytes(source);
  } catch (err) {
    throw asLitheError(err, `cannot read the model ${source instanceof URL ? source.href : typeof source === 'string' ? `'${source}'` : ''}`.trimEnd());
  }
  const model = loadModel(bytes, false);
  if (model !== MISSING) return model;
  await importers();
  return loadBytes(bytes);
}

function isTfjs(s) {
  return s !== null && typeof s === 'object' && !(s instanceof URL) && !(s instanceof ArrayBuffer) &&
    !ArrayBuffer.isView(s) && ('modelJson' in s || ('modelTopology' in s && 'weightSpecs' in s));
}

const asU8 = (b) => (b instanceof Uint8Array ? b : ArrayBuffer.isView(b) ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength)
  : new Uint8Array(b));

// A TF.js layers model, synchronously (after init()): { modelJson, weights } with modelJson the
// text of model.json or its parsed object and weights the shards' bytes (a Uint8Array /
// ArrayBuffer, or an array of them: every path of every manifest group, in manifest order); or
// TF.js's artifacts { modelTopology, weightSpecs, weightData }. The model is one graph node that
// predicts, trains and saves (.lithe) like any lithe model; inputs are TF.js's (NHWC for images).
export function loadTfjs(source) {
  const r = need();
  let { modelJson, weights } = source;
  if (modelJson === undefined) { // TF.js's ModelArtifacts
    modelJson = { format: 'layers-model', modelTopology: source.modelTopology,
                  weightsManifest: [{ paths: [], weights: source.weightSpecs }] };
    weights = source.weightData;
  }
  const json = new TextEncoder().encode(typeof modelJson === 'string' ? modelJson : JSON.stringify(modelJson));
  const parts = (weights === undefined || weights === null ? [] : Array.isArray(weights) ? weights : [weights]).map(asU8);
  const all = new Uint8Array(parts.reduce((n, u) => n + u.byteLength, 0));
  let at = 0;
  for (const u of parts) {
    all.set(u, at);
    at += u.byteLength;
  }
  const pj = r.allocBytes(json);
  let pw = 0;
  try {
    pw = r.allocBytes(all);
    r.check(runLoader(() => r.lithe_tfjs_load_bytes(pj, json.byteLength, pw, all.byteLength, r.outPtr(0)), true));
  } finally {
    r.free(pj);
    if (pw) r.free(pw);
  }
  return new Model(r.readU32(r.outPtr(0)), 'lithe_model_free');
}
// The same, synchronously, for bytes already in hand (after init(); ONNX bytes, or a .lithe file
// holding an imported graph, need the importer module: see importers()).
export function loadBytes(bytes) {
  return loadModel(bytes, true);
}

function loadModel(bytes, sync) {
  const r = need();
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const p = r.allocBytes(u8);
  try {
    const status = runLoader(() => r.lithe_model_load_bytes(p, u8.byteLength, r.outPtr(0)), sync);
    if (status === MISSING) return MISSING;
    r.check(status);
  } finally {
    r.free(p);
  }
  return new Model(r.readU32(r.outPtr(0)), 'lithe_model_free');
}

export default { init, device, load, loadBytes, loadTfjs, tensor, Tensor, adam, sgd, Model, Optimizer, LitheError, STATUS, DTYPE, c, version, usingSimd, simdSupported, relaxedSimdSupported, threads, threadsSupported };
