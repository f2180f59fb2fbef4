// The MLP's training step in WebAssembly under Node (bench/memory/run.py runs it once per mode, each
// in a fresh process: a WebAssembly.Memory only grows). lithe: the npm package (bindings/js, its
// SIMD128 core and importer module from dist/, or --wasm / --importers), mlp.lithe at batch 64,
// trainStep with categorical cross-entropy and Adam; reports the module's WebAssembly.Memory after
// loading and after the steps, and the CPU backend's in-use high-water mark
// (lithe_backend_memory). tfjs: TensorFlow.js 4.22's wasm backend (one thread), the same MLP in
// tfjs-layers (784-512-512-10, Relu, Relu, softmax cross-entropy on the logits), Adam; reports
// the wasm heap (its WebAssembly.Memory) and tf.profile's peakBytes of a step. One JSON line.
// lora-int8 / lora-f16: LoRA on the compact frozen base (mlp_int8.lithe / mlp_f16.lithe, run.py
// writes them). backend_loaded: the backend's bytes in use after loading (in WebAssembly the
// weights are copied into backend blocks, natively they are the mapped file's pages).
//   node wasm_step.mjs lithe MODELS_DIR full|last|lora|lora+recompute|lora-int8|lora-f16 [--wasm F] [--importers F] [--steps N]
//   node wasm_step.mjs tfjs - full|last [--steps N]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const [runtime, dir, mode, ...rest] = process.argv.slice(2);
const opt = (k, d) => (rest.includes(k) ? rest[rest.indexOf(k) + 1] : d);
const steps = Number(opt('--steps', '4'));
const B = 64;
const x = new Float32Array(B * 784).map((_, i) => ((i * 2654435761) % 1000) / 1000);
const labels = Array.from({ length: B }, (_, i) => i % 10);

async function lithe() {
  const lithe = await import(path.join(ROOT, 'bindings/js/src/index.js'));
  const dist = path.join(ROOT, 'bindings/js/dist');
  const wasm = opt('--wasm', path.join(dist, 'lithe-simd.wasm'));
  const importers = opt('--importers', path.join(dist, 'lithe-importers-simd.wasm'));
  await lithe.init({ wasm: fs.readFileSync(wasm), simd: true, importers: fs.readFileSync(importers) });
  const r = lithe.c();
  const base = { 'lora-int8': 'mlp_int8.lithe', 'lora-f16': 'mlp_f16.lithe' }[mode] ?? 'mlp.lithe';
  const model = lithe.loadBytes(fs.readFileSync(path.join(dir, base)));
  const memLoaded = r.memory.buffer.byteLength;
  if (mode === 'last') {
    model.freeze();
    model.freeze('softmax/*', false);
  }
  if (mode.startsWith('lora')) model.addLora({ rank: 8, alpha: 16, seed: 1 });
  if (mode.endsWith('recompute')) {
    const name = r.allocString('recompute');
    r.check(r.lithe_model_set_attr_bool(model.ptr, name, 1)); // the chain recomputes in backprop
    r.free(name);
  }
  const adam = lithe.adam({ learnRate: 0.001, gradClip: 0, useAverages: false });
  const be = r.allocString('cpu');
  r.check(r.lithe_backend_get(be, r.outPtr(0)));
  const cpu = r.readU32(r.outPtr(0));
  const info = r.malloc(16);
  r.check(r.lithe_backend_memory(cpu, info));
  const backendLoaded = r.readU32(info);
  const times = [];
  let allocs1 = 0;
  for (let i = 0; i < steps; i++) {
    const t0 = performance.now();
    model.trainStep({ x: lithe.tensor(x, [B, 784]), y: labels, optimizer: adam });
    times.push((performance.now() - t0) / 1000);
    if (i === 0) {
      r.check(r.lithe_backend_memory(cpu, info));
      allocs1 = r.readU32(info + 12);
    }
  }
  r.check(r.lithe_backend_memory(cpu, info));
  return { runtime: 'lithe', mode, batch: B, wasm_memory_loaded: memLoaded, wasm_memory: r.memory.buffer.byteLength,
    backend_peak: r.readU32(info + 4), backend_loaded: backendLoaded, new_blocks_after_step1: r.readU32(info + 12) - allocs1,
    lora: model.loraCount, step_s: times.slice(1).reduce((a, b) => a + b, 0) / Math.max(1, steps - 1) };
}

async function tfjs() {
  const tf = await import('@tensorflow/tfjs-core');
  const tfl = await import('@tensorflow/tfjs-layers');
  const wasmB = await import('@tensorflow/tfjs-backend-wasm');
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  wasmB.setThreadsCount(1);
  await tf.setBackend('wasm');
  await tf.ready();
  const heap = () => tf.backend().wasm.HEAPU8.buffer.byteLength;
  const m = tfl.sequential();
  m.add(tfl.layers.dense({ inputShape: [784], units: 512, activation: 'relu' }));
  m.add(tfl.layers.dense({ units: 512, activation: 'relu' }));
  m.add(tfl.layers.dense({ units: 10 }));
  if (mode === 'last') m.layers.slice(0, 2).forEach((l) => { l.trainable = false; });
  const memLoaded = heap();
  const adam = tf.train.adam(0.001);
  const xs = tf.tensor2d(x, [B, 784]);
  const ys = tf.cast(tf.oneHot(tf.tensor1d(labels, 'int32'), 10), 'float32');
  const vars = m.trainableWeights.map((w) => w.read());
  const step = () => adam.minimize(() => tf.losses.softmaxCrossEntropy(ys, m.apply(xs)), false, vars);
  const times = [];
  let peak = 0;
  for (let i = 0; i < steps; i++) {
    const t0 = performance.now();
    const prof = await tf.profile(() => { step(); });
    times.push((performance.now() - t0) / 1000);
    peak = Math.max(peak, prof.peakBytes);
  }
  return { runtime: 'tfjs-wasm', mode, batch: B, wasm_memory_loaded: memLoaded, wasm_memory: heap(), tensor_peak: peak,
    step_s: times.slice(1).reduce((a, b) => a + b, 0) / Math.max(1, steps - 1) };
}

console.log(JSON.stringify(await (runtime === 'tfjs' ? tfjs() : lithe())));
