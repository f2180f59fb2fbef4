// The WebGPU backend in Node, part 2 (tests/webgpu/test_webgpu_rest.c in lithe-webgpu-test.wasm):
// the id, sequence, recurrent, attention and int8 primitives against the CPU backend, then whole
// native models (text, BiLSTM tagger, attention, SparseLinear, siamese) predicting and taking ten
// Adam steps as on the CPU. Dawn's Node bindings (npm's webgpu) over SwiftShader, as
// webgpu.test.mjs; without an adapter the tests skip unless LITHE_REQUIRE_WEBGPU is set (not 0).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json'; // Debian's chromium package
const required = !!process.env.LITHE_REQUIRE_WEBGPU && process.env.LITHE_REQUIRE_WEBGPU !== '0';
const wasmPath = process.env.LITHE_WEBGPU_TEST_WASM ?? path.join(root, 'build/wasm-webgpu/bindings/js/lithe-webgpu-test.wasm');

const { moduleImports } = await import('../../bindings/js/src/loader.js');
const { requestDevice, webgpuImports, Asyncify } = await import('../../bindings/js/src/webgpu.js');

let gpu = null, why = '';
try {
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  gpu = create([]);
} catch (e) {
  why = `the webgpu package did not load (${e.message}); run npm ci in tests/webgpu`;
}
const found = gpu ? await requestDevice(gpu) : { device: null, reason: why };
const device = found.device;
const skip = device || required ? false : `no WebGPU device: ${found.reason}`;

async function load(dev) {
  assert.ok(dev, `LITHE_REQUIRE_WEBGPU is set and there is no WebGPU device: ${found.reason}`);
  const module = new WebAssembly.Module(fs.readFileSync(wasmPath));
  const out = [];
  let instance = null;
  const asyncify = new Asyncify();
  const getMemory = () => instance.exports.memory;
  const base = moduleImports(module, getMemory, (fd, text) => out.push(text));
  const wg = webgpuImports(dev, getMemory, asyncify);
  instance = await WebAssembly.instantiate(module, { ...base, ...wg.imports });
  instance.exports._initialize?.();
  asyncify.attach(instance, instance.exports.malloc);
  return { instance, wg, out, call: (name, ...a) => asyncify.call(name, ...a) };
}

test('ids, sequences, LSTM, attention, Cauchy and int8 GEMM primitives match the CPU backend', { skip }, async () => {
  const m = await load(device);
  const fails = await m.call('wgt_rest_primitives');
  assert.equal(fails, 0, m.out.join('\n'));
  assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
  console.log(`primitives: ${m.wg.stats.dispatches} dispatches, ${m.wg.stats.submits} submits, ${m.wg.stats.pipelines} pipelines`);
});

test('five native models predict and take ten Adam steps as on the CPU', { skip }, async () => {
  const m = await load(device);
  const fails = await m.call('wgt_rest_models');
  console.log(m.out.join('\n'));
  assert.equal(fails, 0, m.out.join('\n'));
  assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
});
