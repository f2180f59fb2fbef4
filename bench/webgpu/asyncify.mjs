// What Asyncify costs lithe-webgpu.wasm at run time (docs/backends.md, "WebGPU"), in Node on the
// webgpu package (Dawn) over SwiftShader:
//  1. a read-back through the module (lithe_tensor_read of 16 bytes of a device tensor: the
//     recorder's submit + mapAsync, plus Asyncify's unwind, await and rewind back into the call)
//     against the same submit + mapAsync made from JS alone: the difference is the unwind/rewind;
//  2. the instrumentation's cost to code that never suspends: a CPU training step (784-512-512-10
//     MLP, batch 64, Adam) in the Asyncify'd WebGPU module against the CPU-only SIMD128 module
//     (each in its own process: the npm package holds one module per process).
//   node bench/webgpu/asyncify.mjs [--test-wasm build/wasm-webgpu/bindings/js/lithe-webgpu-test.wasm]
//        [--webgpu-wasm build/wasm-webgpu/bindings/js/lithe-webgpu.wasm] [--cpu-wasm bindings/js/dist/lithe-simd.wasm]
//        [--model build/bench/mlp.lithe]
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const argv = process.argv.slice(2);
const take = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : dflt;
};
const testWasm = path.resolve(take('--test-wasm', path.join(root, 'build/wasm-webgpu/bindings/js/lithe-webgpu-test.wasm')));
const wgWasm = path.resolve(take('--webgpu-wasm', path.join(root, 'build/wasm-webgpu/bindings/js/lithe-webgpu.wasm')));
const cpuWasm = path.resolve(take('--cpu-wasm', path.join(root, 'bindings/js/dist/lithe-simd.wasm')));
const modelPath = path.resolve(take('--model', path.join(root, 'build/bench/mlp.lithe')));
const stepOn = take('--cpu-step'); // (child: 'webgpu-module' or 'cpu-module')
process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
const { create, globals } = await import(path.join(root, 'tests/webgpu/node_modules/webgpu/index.js'));
Object.assign(globalThis, globals);
const gpu = create([]);

async function cpuStep(which) {
  const lithe = await import(path.join(root, 'bindings/js/src/index.js'));
  await lithe.init(which === 'webgpu-module' ? { device: 'webgpu', gpu, wasm: fs.readFileSync(wgWasm) } : { wasm: fs.readFileSync(cpuWasm), simd: true });
  const m = lithe.loadBytes(fs.readFileSync(modelPath));
  const opt = lithe.adam({ learnRate: 0.001 });
  const x = lithe.tensor(new Float32Array(64 * 784).map((_, i) => (i % 17) / 17), [64, 784]);
  const y = Int32Array.from({ length: 64 }, (_, i) => i % 10);
  for (let i = 0; i < 3; i++) m.trainStep({ x, y, optimizer: opt });
  const t = [];
  for (let i = 0; i < 15; i++) {
    const a = performance.now();
    m.trainStep({ x, y, optimizer: opt });
    t.push(performance.now() - a);
  }
  t.sort((a, b) => a - b);
  console.log(JSON.stringify({ median_ms: t[7] }));
}
if (stepOn) {
  await cpuStep(stepOn);
  process.exit(0);
}

// 1. read-backs
const { moduleImports } = await import(path.join(root, 'bindings/js/src/loader.js'));
const { requestDevice, webgpuImports, Asyncify } = await import(path.join(root, 'bindings/js/src/webgpu.js'));
const found = await requestDevice(gpu);
if (!found.device) throw new Error(`no WebGPU device: ${found.reason}`);
const device = found.device;
const module = new WebAssembly.Module(fs.readFileSync(testWasm));
let instance = null;
const asyncify = new Asyncify();
const getMemory = () => instance.exports.memory;
const wg = webgpuImports(device, getMemory, asyncify, found.info);
instance = await WebAssembly.instantiate(module, { ...moduleImports(module, getMemory, () => {}), ...wg.imports });
instance.exports._initialize?.();
asyncify.attach(instance, instance.exports.malloc);
const ex = instance.exports;
const slot = ex.malloc(16), name = ex.malloc(8), shape = ex.malloc(8), dst = ex.malloc(16);
new Uint8Array(ex.memory.buffer).set(new TextEncoder().encode('webgpu\0'), name);
if (ex.lithe_backend_get(name, slot)) throw new Error('no webgpu backend');
const be = new Uint32Array(ex.memory.buffer, slot, 1)[0];
new BigInt64Array(ex.memory.buffer, shape, 1)[0] = 4n;
if (ex.lithe_tensor_new(be, 0 /* F32 */, 1, shape, slot + 4)) throw new Error('lithe_tensor_new');
const t = new Uint32Array(ex.memory.buffer, slot + 4, 1)[0];
const N = 200;
const timeIt = async (fn) => {
  for (let i = 0; i < 10; i++) await fn();
  const a = performance.now();
  for (let i = 0; i < N; i++) await fn();
  return (performance.now() - a) / N;
};
const viaModule = await timeIt(() => asyncify.call('lithe_tensor_read', t, dst, 16));
const src = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
const viaJs = await timeIt(async () => {
  const st = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, st, 0, 16);
  device.queue.submit([enc.finish()]);
  await st.mapAsync(GPUMapMode.READ);
  new Uint8Array(st.getMappedRange()).slice();
  st.unmap();
  st.destroy();
});
console.log(`read-back of 16 bytes: ${viaModule.toFixed(3)} ms through the module (Asyncify unwind + rewind), ` +
            `${viaJs.toFixed(3)} ms from JS alone: Asyncify adds ${(viaModule - viaJs).toFixed(3)} ms per read-back (${N} each)`);

// 2. the instrumentation on code that never suspends
const child = (which) => {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--cpu-step', which, '--webgpu-wasm', wgWasm, '--cpu-wasm', cpuWasm, '--model', modelPath], { encoding: 'utf8' });
  const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
  if (!line) throw new Error(`${which}: ${r.stderr}`);
  return JSON.parse(line).median_ms;
};
const withA = child('webgpu-module'), without = child('cpu-module');
console.log(`CPU training step (784-512-512-10, batch 64, Adam; median of 15): ${withA.toFixed(1)} ms in the Asyncify'd WebGPU module, ` +
            `${without.toFixed(1)} ms in the CPU-only SIMD128 module: ${(100 * (withA / without - 1)).toFixed(1)} % for the instrumentation`);
process.exit(0);
