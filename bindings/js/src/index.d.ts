// Type declarations for the npm package `lithe-wasm` (src/index.js).
import type { Raw } from './raw.js';

export type TensorData = Float32Array | Int32Array | BigInt64Array | BigUint64Array | Uint8Array | Uint32Array;

export declare const STATUS: Readonly<{
  OK: 0; INVALID_ARG: 1; SHAPE: 2; DTYPE: 3; OOM: 4; NOT_FOUND: 5; STATE: 6; UNSUPPORTED: 7; IO: 8; FORMAT: 9;
  VALUE: 10; INTERNAL: 11;
}>;
export declare const DTYPE: Readonly<{ F32: 0; F16: 1; BF16: 2; I32: 3; I64: 4; U64: 5; U8: 6; U32: 7 }>;

/** Every error the package throws: a non-OK lithe_status with lithe_last_error()'s message, or
 *  this layer's own check (arguments: LITHE_ERR_INVALID_ARG / _VALUE / _SHAPE / _DTYPE; a file or
 *  fetch that fails: LITHE_ERR_IO, with the underlying error as `cause`). The instance stays usable
 *  (after a trap, LITHE_ERR_INTERNAL, it refuses further calls). */
export declare class LitheError extends Error {
  readonly status: number;
  /** "LITHE_ERR_SHAPE", ... */
  readonly statusName: string;
  /** lithe_last_error()'s text. */
  readonly detail: string;
  /** The underlying error, where there is one (Node's ENOENT, a WebAssembly.RuntimeError, ...). */
  readonly cause?: unknown;
}

export interface InitOptions {
  /** Force the SIMD128 (true) or scalar (false) build; default: feature detection. */
  simd?: boolean;
  /** The relaxed-SIMD build (f32x4.relaxed_madd in the GEMM: fused where the engine has FMA, so not
   *  bit-identical to the SIMD128 build), loaded on one thread where the engine validates relaxed
   *  SIMD (Chromium; not Node 20): false refuses it, true forces it where valid. */
  relaxed?: boolean;
  /** The .wasm as bytes, a URL, a path (Node) or a compiled module; default: the package's file. */
  wasm?: Uint8Array | ArrayBuffer | URL | string | WebAssembly.Module;
  /** Where C's stdout (fd 1) and stderr (fd 2) lines go; default: console.log / console.warn. */
  print?: (fd: number, line: string) => void;
  /** Threads in all (default min(4, ceil(cores / 2))). More than one loads the threads build and
   *  starts threads - 1 workers where shared memory is allowed (Node; a cross-origin isolated page
   *  or worker); elsewhere one thread, silently. */
  threads?: number;
  /** Where src/thread.js (the workers' script) is served, if a bundler moved it. */
  threadUrl?: URL | string;
  /** Where the importer module (ONNX, TF.js: lithe-importers.wasm, or lithe-importers-simd.wasm
   *  for the SIMD128 build) is, as bytes, a URL, a path (Node) or a compiled module, linked when a
   *  model first needs it (default: the package's file for the build); or true to link the
   *  package's own at init. */
  importers?: true | Uint8Array | ArrayBuffer | URL | string | WebAssembly.Module;
  /** 'cpu' (default) or 'webgpu': ask WebGPU for an adapter and, when one answers, load the WebGPU
   *  module (dist/lithe-webgpu.wasm, or `wasm`); without one, the CPU module (InitInfo.deviceReason says why). */
  device?: 'cpu' | 'webgpu';
  /** The GPU to ask: navigator.gpu by default; in Node, e.g. the webgpu package's create([]). */
  gpu?: unknown;
}
export interface InitInfo {
  simd: boolean;
  /** Threads the CPU backend computes with. */
  threads: number;
  /** The module running: the threads build, the relaxed-SIMD build, the SIMD128 build or the scalar one. */
  build: 'simd-threads' | 'relaxed-simd' | 'simd' | 'scalar';
  version: string;
  /** Where models can compute: 'webgpu' when init({ device: 'webgpu' }) found an adapter. */
  device: 'cpu' | 'webgpu';
  /** Why WebGPU was not used when it was asked for (no navigator.gpu, no adapter, ...), else null. */
  deviceReason: string | null;
}
/** The device the module computes on, and the WebGPU recorder's counters (dispatches, submits, read-backs, ...). */
export declare function device(): { device: 'cpu' | 'webgpu'; reason: string | null; info: unknown; stats: Record<string, number> | null };

/** Loads and starts the WebAssembly module once; later calls return the same promise. */
export declare function init(options?: InitOptions): Promise<InitInfo>;
/** True where the engine validates a WebAssembly SIMD128 instruction. */
export declare function simdSupported(): boolean;
/** True where the engine validates relaxed SIMD in its standard encoding (f32x4.relaxed_madd and i32x4.relaxed_dot_i8x16_i7x16_add_s) and its int8 dot gives the defined sum: Chromium 114+, not Node 20 (whose experimental flag miscomputes the dot). */
export declare function relaxedSimdSupported(): boolean;
/** Whether the running instance is the SIMD128 build (after init()). */
export declare function usingSimd(): boolean;
/** True where the threads build can run: shared WebAssembly memory and workers (Node; a cross-origin isolated page or worker). */
export declare function threadsSupported(): boolean;
/** Threads the CPU backend computes with (after init()). */
export declare function threads(): number;
/** The C library's version (after init()). */
export declare function version(): string;
/** The thin layer: every C function of include/lithe.h by its C name, plus memory helpers. */
export declare function c(): Raw;

/** An n-dimensional array: a TypedArray (row-major) and its shape. */
export declare class Tensor<T extends TensorData = TensorData> {
  constructor(data: T, shape?: readonly number[]);
  readonly data: T;
  readonly shape: number[];
  readonly dtype: number;
  readonly size: number;
  /** The index of the largest value in each row of a 2-D tensor. */
  argmax(): Int32Array;
}
/** A tensor from a TypedArray (or a number array, as float32) and its shape. */
export declare function tensor<T extends TensorData>(data: T, shape?: readonly number[]): Tensor<T>;
export declare function tensor(data: number[], shape?: readonly number[]): Tensor<Float32Array>;

export type TensorLike = Tensor | { data: TensorData; shape: readonly number[] } | TensorData;

/** A C object with an explicit dispose() (a FinalizationRegistry frees forgotten ones eventually). */
declare class Handle {
  /** Frees the C object now; safe to call twice. Using it afterwards throws. */
  dispose(): void;
  readonly disposed: boolean;
}

/** Thinc's Optimizer (Adam or SGD). */
export declare class Optimizer extends Handle {}
export interface AdamOptions {
  learnRate?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  L2?: number;
  gradClip?: number;
  useAverages?: boolean;
}
/** Adam with Thinc's defaults (learnRate 0.001, gradClip 1.0, useAverages true). */
export declare function adam(options?: AdamOptions): Optimizer;
/** SGD; learnRate is required. */
export declare function sgd(options: { learnRate: number; L2?: number; gradClip?: number; useAverages?: boolean }): Optimizer;

export type Loss = 'categorical_crossentropy' | 'cce' | 'l2' | 'mse';
export interface TrainStep {
  x: TensorLike;
  /** Int32Array labels (B,) or float32 targets (B, C) for categorical_crossentropy; for l2, targets of
   *  the output's shape (any rank: (B, T, N) sequences too). */
  y: TensorLike | number[];
  loss?: Loss;
  optimizer: Optimizer;
  /** What trainStep returns: 'loss' (default) the loss as PyTorch and tfjs report it (the mean
   *  cross-entropy, or the mean squared error for l2); 'thinc' Thinc 8.1's figure (the sum of the
   *  squared gradient). */
  report?: 'loss' | 'thinc';
}

/** A lithe model (Thinc's Model tree) living in the WebAssembly instance. */
export declare class Model extends Handle {
  /** Thinc's model.name. */
  readonly name: string;
  /** Seeds the tree (dropout masks): training repeats exactly, as native lithe does with the same seed. */
  setSeed(seed: number | bigint): this;
  /** forward with is_train = false, the weights prepared for inference first (packed once; same bits, one extra copy of the weights' memory). */
  predict(x: TensorLike, shape?: readonly number[]): Tensor<Float32Array>;
  /** begin_update, loss, backprop, finish_update; returns the loss of the output before the update
   *  (the mean cross-entropy or mean squared error; Thinc's sum of squared gradients with report: 'thinc'). */
  trainStep(step: TrainStep): number;
  /** Moves the weights to 'webgpu' (after init({ device: 'webgpu' }) found an adapter) or back to 'cpu'.
   *  A model on WebGPU predicts and trains through predictAsync / trainStepAsync only. */
  to(device: 'cpu' | 'webgpu'): Promise<this>;
  /** predict as a promise (on WebGPU: one submit for the forward pass, one read-back of the output). */
  predictAsync(x: TensorLike, shape?: readonly number[]): Promise<Tensor<Float32Array>>;
  /** trainStep as a promise (on WebGPU the loss is a read-back). */
  /** trainStep as a promise; on WebGPU with int labels one read-back per step (the loss, with the
   *  guesses' range check; the labels are checked on the host before they go up). */
  trainStepAsync(step: TrainStep): Promise<number>;
  /** Grows the output layer to n classes, keeping the old rows (new ones start at zero). */
  resizeOutput(n: number): this;
  /** Freezes (frozen = false: thaws) the params matching a glob, or the whole model; returns the count matched (-1: whole model). */
  freeze(pattern?: string, frozen?: boolean): number;
  isFrozen(param: string): boolean;
  /** The bytes one training step needs, planned before running it (a dry run at 1 and 2 rows). */
  planTrain(opts: { x: Tensor | Float32Array; shape?: number[]; batch?: number; optimizer?: Optimizer }): {
    params: number; grads: number; optState: number; activations: number; workspace: number; total: number;
  };
  /** Refuse trainStep over this many bytes (0: no budget). */
  setMemoryBudget(bytes: number, opts?: { optimizer?: Optimizer }): this;
  /** Recomputation (trading time for memory): chains, and imported graphs by segment (segments 0: chosen; rows > 0: a row-wise segment's backward that many rows of the batch at a time). */
  setRecompute(on?: boolean, opts?: { segments?: number; rows?: number }): this;
  /** The model as .lithe bytes (with the optimizer's state when one is given). */
  /** The dense layers' W stored compact (int8 per-row, float16, bfloat16; float32 turns them back); returns how many changed. */
  compressWeights(dtype?: 'int8' | 'float16' | 'bfloat16' | 'float32'): number;
  /** Static int8 quantization calibrated on the rows of x (lithe_model_quantize_static): a new model, a QDQ graph. */
  quantizeStatic(x: Float32Array, shape: number[]): Model & { quantizedNodes: number };
  /** LoRA adapters on the weights matching the glob `pattern` (all dense / Gemm / MatMul / Conv
   * weights when omitted), the rest frozen; returns how many weights carry one. */
  addLora(options?: { pattern?: string; rank?: number; alpha?: number; seed?: number }): number;
  readonly loraCount: number;
  mergeLora(): this;
  loraBaseHash(): string;
  saveLora(): Uint8Array;
  loadLora(bytes: Uint8Array | ArrayBuffer): this;
  save(options?: { optimizer?: Optimizer }): Uint8Array;
  /** The model as ONNX bytes with its current weights, for onnxruntime or Triton (lithe_model_save_onnx_bytes). */
  saveOnnx(): Uint8Array;
  /** A model loaded from TF.js (loadTfjs, or a .lithe file made from one) written back as TF.js
   * layers format: model.json's text (the original topology; one weights group naming the shard
   * "group1-shard1of1.bin"), the shard's bytes (float32 weights, the current ones), and the same as
   * TF.js ModelArtifacts for tf.loadLayersModel(tf.io.fromMemory(artifacts)). Throws LitheError
   * (LITHE_ERR_UNSUPPORTED) for a model that did not come from TF.js. */
  saveTfjs(): { modelJson: string; weights: Uint8Array; artifacts: { modelTopology: unknown; weightSpecs: unknown[];
    weightData: ArrayBuffer; [key: string]: unknown } };
}

/** A TF.js layers model: model.json (text or parsed) and the weight shards' bytes (every path of
 *  every manifest group, in manifest order), or TF.js's own model artifacts. */
export type TfjsSource =
  | { modelJson: string | object; weights?: Uint8Array | ArrayBuffer | ArrayBufferView | ReadonlyArray<Uint8Array | ArrayBuffer | ArrayBufferView> }
  | { modelTopology: object; weightSpecs: object[]; weightData?: ArrayBuffer | Uint8Array };
/** A model from .lithe or ONNX bytes (an .onnx file becomes one graph node that predicts and
 *  trains; its weights must be inside the file, not in external data), a URL or (in Node) a file
 *  path, or a TF.js layers model; calls init() if needed. */
export declare function load(source: Uint8Array | ArrayBuffer | URL | string | TfjsSource): Promise<Model>;
/** A TF.js layers model (docs/tfjs.md), synchronously (after init()): one graph node that predicts, trains and saves.
 *  ONNX and TF.js models (and .lithe files holding one) need the importer module: load() links it
 *  when a model needs it; these synchronous calls link it themselves in Node, and elsewhere need it
 *  linked already (an earlier load() of such a model, or init({ importers: true })). */
export declare function loadTfjs(source: TfjsSource): Model;
/** The same for bytes in hand, synchronously (after init()). */
export declare function loadBytes(bytes: Uint8Array | ArrayBuffer): Model;

declare const lithe: {
  init: typeof init; load: typeof load; loadBytes: typeof loadBytes; loadTfjs: typeof loadTfjs; tensor: typeof tensor; Tensor: typeof Tensor;
  adam: typeof adam; sgd: typeof sgd; Model: typeof Model; Optimizer: typeof Optimizer; LitheError: typeof LitheError;
  STATUS: typeof STATUS; DTYPE: typeof DTYPE; c: typeof c; version: typeof version; usingSimd: typeof usingSimd;
  simdSupported: typeof simdSupported; relaxedSimdSupported: typeof relaxedSimdSupported; threads: typeof threads; threadsSupported: typeof threadsSupported;
};
export default lithe;
