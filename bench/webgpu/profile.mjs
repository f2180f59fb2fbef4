// Per-dispatch profile of one ONNX prediction on WebGPU in Node (npm's `webgpu`, Dawn, over
// SwiftShader by default): the npm API predicts twice (warm-up: pipelines compiled), then a third
// prediction's dispatches are recorded (pipeline, bind group, workgroups, by wrapping the compute
// pass) and replayed ONE BY ONE, each its own submit timed to onSubmittedWorkDone. Prints the
// dispatches by shader (first comment line of its WGSL past common.wgsl) and OP, slowest first,
// and the 20 slowest dispatches (their index in the prediction, workgroups).
// A replay re-runs a kernel on the buffers as they are after the prediction: the times are the
// kernels', the outputs are not checked (the conformance tests do that).
//   VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json \
//   node bench/webgpu/profile.mjs MODEL.onnx INPUT.npy [--wasm build/wasm-webgpu/bindings/js/lithe-webgpu.wasm]
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { npyRead } from '../runners/common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const argv = process.argv.slice(2);
const take = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : dflt;
};
const wasm = take('--wasm', path.join(root, 'build/wasm-webgpu/bindings/js/lithe-webgpu.wasm'));
const [modelPath, inputPath] = argv;
if (!modelPath || !inputPath) throw new Error('usage: node profile.mjs MODEL.onnx INPUT.npy [--wasm FILE]');
process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';

const { create, globals } = createRequire(path.join(root, 'tests/webgpu/package.json'))('webgpu');
Object.assign(globalThis, globals);
const lithe = await import('../../bindings/js/src/index.js');
const info = await lithe.init({ device: 'webgpu', gpu: create([]), wasm: fs.readFileSync(wasm) });
if (info.device !== 'webgpu') throw new Error(`no WebGPU: ${info.deviceReason}`);

// which shader a pipeline runs: its WGSL's first comment past common.wgsl, and OP
const names = new WeakMap(), modules = new WeakMap();
const D = globalThis.GPUDevice.prototype;
const { createShaderModule, createComputePipeline } = D;
let device = null;
D.createShaderModule = function (d) {
  device = this;
  const mod = createShaderModule.call(this, d);
  // the shader's own text follows its includes: the comment block holding its first //!include
  // line, else the first comment past common.wgsl
  const lines = d.code.split('\n');
  let at = lines.findIndex((l) => l.startsWith('//!include'));
  if (at >= 0) while (at > 0 && lines[at - 1].startsWith('//')) at--;
  else at = lines.slice(lines.findIndex((l) => l.startsWith('fn stride(')) + 1).findIndex((l) => l.startsWith('//')) +
    lines.findIndex((l) => l.startsWith('fn stride(')) + 1;
  modules.set(mod, lines[at]?.slice(3, 70) ?? '?');
  return mod;
};
D.createComputePipeline = function (d) {
  const p = createComputePipeline.call(this, d);
  names.set(p, `${modules.get(d.compute.module)} [OP ${d.compute.constants?.OP ?? 0}]`);
  return p;
};

const x = npyRead(inputPath);
const m = await lithe.load(fs.readFileSync(modelPath));
await m.to('webgpu');
const xt = lithe.tensor(x.data, x.shape);
for (let i = 0; i < 2; i++) {
  const t0 = performance.now();
  await m.predictAsync(xt);
  console.log(`warm-up prediction ${i + 1}: ${(performance.now() - t0).toFixed(0)} ms`);
}

// record a prediction's dispatches
const rec = [];
const pass = globalThis.GPUComputePassEncoder.prototype;
const { setPipeline, setBindGroup, dispatchWorkgroups } = pass;
let cur = {};
pass.setPipeline = function (p) { cur.p = p; return setPipeline.call(this, p); };
pass.setBindGroup = function (i, g, ...r) { cur.g = g; cur.off = r[0]; return setBindGroup.call(this, i, g, ...r); };
pass.dispatchWorkgroups = function (gx, gy = 1) { rec.push({ ...cur, gx, gy }); return dispatchWorkgroups.call(this, gx, gy); };
const t0 = performance.now();
await m.predictAsync(xt);
const whole = performance.now() - t0;
Object.assign(pass, { setPipeline, setBindGroup, dispatchWorkgroups });
if (!device) throw new Error('the device was not found (no pipeline created)');

// replay one by one
let total = 0;
for (const r of rec) {
  const enc = device.createCommandEncoder();
  const cp = enc.beginComputePass();
  cp.setPipeline(r.p);
  cp.setBindGroup(0, r.g);
  cp.dispatchWorkgroups(r.gx, r.gy);
  cp.end();
  const a = performance.now();
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
  r.ms = performance.now() - a;
  r.name = names.get(r.p) ?? '?';
  total += r.ms;
}
const by = new Map();
for (const r of rec) {
  const e = by.get(r.name) ?? { n: 0, ms: 0 };
  e.n++; e.ms += r.ms;
  by.set(r.name, e);
}
console.log(`\nprediction ${whole.toFixed(0)} ms (one submit); ${rec.length} dispatches replayed one by one: ${total.toFixed(0)} ms`);
console.log('\nms total | dispatches | shader [OP]');
for (const [k, e] of [...by].sort((a, b) => b[1].ms - a[1].ms)) console.log(`${e.ms.toFixed(1).padStart(9)} | ${String(e.n).padStart(4)} | ${k}`);
console.log('\nthe slowest dispatches: ms | #index shader | workgroups');
rec.forEach((r, i) => { r.i = i; });
for (const r of [...rec].sort((a, b) => b.ms - a.ms).slice(0, 20)) console.log(`${r.ms.toFixed(1).padStart(8)} | #${r.i} ${r.name} | ${r.gx} x ${r.gy}`);
process.exit(0);
