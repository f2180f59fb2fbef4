// The fine-tuning demo's recipe, in one module that the page's Web Worker (finetune-worker.js),
// the base model's script (make-cnn.mjs) and the accuracy script (finetune-accuracy.mjs, in Node)
// all run, so the figures the script reports are the page's. Every function takes the lithe
// package as its first argument (the page and Node import it by different names). Everything a
// model does here — the CNN, its training, freezing, LoRA, the memory plan — is lithe's C code;
// this file only builds batches and says which layers train.

export const NAMES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'];
export const OLD = 8; // the base model knows classes 0..7; Bag (8) and Ankle boot (9) are the new task's
export const D = 784;

// The three ways to fine-tune, and what each trains. `lr`: Adam's learning rate (no averages),
// each mode's best of those tried with finetune-accuracy.mjs over seeds 1, 2, 3 (full: 0.001,
// 0.002; last: 0.005, 0.01, 0.02; LoRA: 0.003, 0.005, 0.01; docs/training.md "The demo").
export const MODES = {
  full: { label: 'full fine-tuning', lr: 0.001 },
  last: { label: 'last layer only (the rest frozen)', lr: 0.005 },
  lora: { label: 'LoRA rank 8 (base frozen)', lr: 0.005, rank: 8, alpha: 16 },
};
export const RECIPE = { steps: 300, batch: 32, seed: 1 };

// A small seeded generator (mulberry32), so that a run repeats in the page and in Node.
export function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// An IDX file's payload (after its header): uint8 images (n x 784) or labels (n).
export function idxPayload(bytes) {
  const dims = bytes[3];
  return bytes.subarray(4 + 4 * dims);
}

// The CNN as a TF.js layers model (NHWC input, 28 x 28 x 1) up to its 64 features, with seeded
// He-uniform kernels: conv 3x3x8, pool, conv 3x3x16, pool, dense 64. lithe imports it as one graph
// node (docs/tfjs.md) and the base puts lithe's own Softmax on top (buildBase).
function featureArtifacts(seed) {
  const layers = [
    { class_name: 'Conv2D', config: { name: 'conv1', filters: 8, kernel_size: [3, 3], padding: 'same', activation: 'relu', batch_input_shape: [null, 28, 28, 1] } },
    { class_name: 'MaxPooling2D', config: { name: 'pool1', pool_size: [2, 2], strides: [2, 2], padding: 'valid' } },
    { class_name: 'Conv2D', config: { name: 'conv2', filters: 16, kernel_size: [3, 3], padding: 'same', activation: 'relu' } },
    { class_name: 'MaxPooling2D', config: { name: 'pool2', pool_size: [2, 2], strides: [2, 2], padding: 'valid' } },
    { class_name: 'Flatten', config: { name: 'flat' } },
    { class_name: 'Dense', config: { name: 'fc', units: 64, activation: 'relu' } },
  ];
  const specs = [['conv1/kernel', [3, 3, 1, 8], 9], ['conv1/bias', [8]], ['conv2/kernel', [3, 3, 8, 16], 72], ['conv2/bias', [16]],
    ['fc/kernel', [784, 64], 784], ['fc/bias', [64]]];
  const rand = rng(seed);
  const n = specs.reduce((s, [, shape]) => s + shape.reduce((a, b) => a * b, 1), 0);
  const data = new Float32Array(n);
  let at = 0;
  for (const [, shape, fanIn] of specs) {
    const k = shape.reduce((a, b) => a * b, 1);
    if (fanIn) for (let i = 0; i < k; i++) data[at + i] = (2 * rand() - 1) * Math.sqrt(6 / fanIn);
    at += k;
  }
  return { modelTopology: { class_name: 'Sequential', config: { name: 'cnn', layers } },
    weightSpecs: specs.map(([name, shape]) => ({ name, shape, dtype: 'float32' })), weightData: data.buffer };
}

// The untrained base: chain(the TF.js CNN, Softmax(8)) — lithe's Softmax layer, whose backprop
// takes the cross-entropy's gradient as the logits' (Thinc's convention). Built through the
// C-mirror layer (lithe.c()): the npm API has no chain().
export async function buildBase(lithe, seed = 0) {
  const graph = await lithe.load(featureArtifacts(seed));
  const r = lithe.c();
  const opts = r.malloc(32); // lithe_softmax_opts in wasm32: int64 nO, int64 nI, bool, float, bool
  const layers = r.malloc(8);
  try {
    r.u8().fill(0, opts, opts + 32);
    const dv = r.dv();
    dv.setBigInt64(opts, BigInt(OLD), true);
    dv.setBigInt64(opts + 8, 64n, true);
    r.check(r.lithe_softmax(opts, r.outPtr(0)));
    const softmax = r.readU32(r.outPtr(0));
    r.dv().setUint32(layers, r.lithe_model_retain(graph.ptr), true); // the chain takes this reference
    r.dv().setUint32(layers + 4, softmax, true);
    r.check(r.lithe_chain(2, layers, r.outPtr(0)));
    const model = new lithe.Model(r.readU32(r.outPtr(0)), 'lithe_model_free');
    r.check(r.lithe_model_initialize(model.ptr, 0, 0));
    return model;
  } finally {
    r.free(opts);
    r.free(layers);
    graph.dispose();
  }
}

// Images idxs of `images` (uint8, n x 784) as a float batch (B, 28, 28, 1) in [0, 1].
export function batchOf(lithe, images, idxs) {
  const x = new Float32Array(idxs.length * D);
  idxs.forEach((k, r) => {
    for (let j = 0, o = k * D; j < D; j++) x[r * D + j] = images[o + j] / 255;
  });
  return lithe.tensor(x, [idxs.length, 28, 28, 1]);
}

// Trains the base on the examples of the first OLD classes (make-cnn.mjs).
export function trainBase(lithe, model, images, labels, { steps = 600, batch = 64, lr = 0.002, seed = 0, onStep } = {}) {
  const pool = [];
  for (let k = 0; k < labels.length; k++) if (labels[k] < OLD) pool.push(k);
  const rand = rng(seed + 100);
  const opt = lithe.adam({ learnRate: lr, useAverages: false });
  model.setSeed(seed);
  try {
    for (let step = 0; step < steps; step++) {
      const idxs = Array.from({ length: batch }, () => pool[Math.floor(rand() * pool.length)]);
      const loss = model.trainStep({ x: batchOf(lithe, images, idxs), y: lithe.tensor(Int32Array.from(idxs, (k) => labels[k]), [batch]), optimizer: opt });
      onStep?.(step, loss);
    }
  } finally {
    opt.dispose();
  }
}

// The CPU backend's memory (lithe_backend_memory: bytes in use, their peak since the last reset,
// bytes cached) and the WebAssembly memory's size.
export function backendMemory(lithe, reset = false) {
  const r = lithe.c();
  const name = r.allocString('cpu');
  const info = r.malloc(16);
  try {
    r.check(r.lithe_backend_get(name, r.outPtr(0)));
    const be = r.readU32(r.outPtr(0));
    if (reset) r.check(r.lithe_backend_reset_peak(be));
    r.check(r.lithe_backend_memory(be, info));
    const f = (i) => r.readU32(info + 4 * i); // size_t is 32-bit in wasm32
    return { inUse: f(0), peak: f(1), cached: f(2), blocks: f(3), wasm: r.memory.buffer.byteLength };
  } finally {
    r.free(name);
    r.free(info);
  }
}

// Makes a fresh copy of the base ready for `mode`: two more outputs (the new classes' rows start
// at zero), then what trains — everything; the Softmax layer alone; or rank-8 LoRA adapters on
// every dense weight (the CNN's fc kernel and the Softmax's W; lithe adapts an imported graph's
// Gemm / MatMul / Conv weights, and this graph's convolutions reach their kernels through a
// Transpose, so they stay frozen) with the rest frozen.
export function prepare(lithe, baseBytes, mode) {
  const m = MODES[mode];
  if (!m) throw new Error(`unknown mode '${mode}' (${Object.keys(MODES).join(', ')})`);
  const model = lithe.loadBytes(baseBytes);
  try {
    model.resizeOutput(NAMES.length);
    if (mode === 'last') {
      model.freeze();
      model.freeze('softmax/*', false);
    } else if (mode === 'lora') {
      model.addLora({ rank: m.rank, alpha: m.alpha, seed: 1 });
    }
  } catch (e) {
    model.dispose();
    throw e;
  }
  return model;
}

// Fine-tunes the base (its .lithe bytes) on the new-class task in `mode`: batches drawn (seeded)
// from `pool` (indices into images / labels, all ten classes). onStep(step, loss, memory) gets the
// plan (planTrain: bytes the step needs, reported before it) and after the step the backend's
// peak during it and the WebAssembly memory. Returns the model (to evaluate, save, merge).
export function fineTune(lithe, baseBytes, images, labels, pool, { mode, steps = RECIPE.steps, batch = RECIPE.batch,
  seed = RECIPE.seed, lr = MODES[mode]?.lr, onStep } = {}) {
  const model = prepare(lithe, baseBytes, mode);
  const opt = lithe.adam({ learnRate: lr, useAverages: false });
  const rand = rng(seed);
  model.setSeed(seed);
  let plan = null;
  try {
    for (let step = 0; step < steps; step++) {
      const idxs = Array.from({ length: batch }, () => pool[Math.floor(rand() * pool.length)]);
      const x = batchOf(lithe, images, idxs), y = lithe.tensor(Int32Array.from(idxs, (k) => labels[k]), [batch]);
      plan ??= model.planTrain({ x, batch, optimizer: opt });
      backendMemory(lithe, true);
      const loss = model.trainStep({ x, y, optimizer: opt });
      onStep?.(step, loss, { plan, measured: backendMemory(lithe) });
    }
  } catch (e) {
    model.dispose();
    throw e;
  } finally {
    opt.dispose();
  }
  return model;
}

// Held-out figures: accuracy over the ten classes, on the old eight and on the two new ones.
export function evaluate(lithe, model, images, labels, idxs, batch = 500) {
  let ok = 0, oldN = 0, oldOk = 0, newN = 0, newOk = 0;
  for (let s = 0; s < idxs.length; s += batch) {
    const part = idxs.slice(s, s + batch);
    const pred = model.predict(batchOf(lithe, images, part)).argmax();
    part.forEach((k, i) => {
      const hit = pred[i] === labels[k];
      ok += hit;
      if (labels[k] < OLD) { oldN++; oldOk += hit; } else { newN++; newOk += hit; }
    });
  }
  return { acc: ok / idxs.length, oldAcc: oldOk / oldN, newAcc: newOk / newN, n: idxs.length };
}

// The split of Fashion-MNIST's test set the page and the script use: images 0..4999 to fine-tune
// on (all ten classes), 5000..9999 held out.
export function split(n = 10000) {
  const pool = [], heldout = [];
  for (let k = 0; k < n; k++) (k < n / 2 ? pool : heldout).push(k);
  return { pool, heldout };
}
