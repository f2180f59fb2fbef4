// What the Node WebGPU tests share (cases.test.mjs, webgpu.test.mjs, graph.test.mjs): Dawn's Node
// bindings (npm's `webgpu`) over SwiftShader, the adapter looked up once, and load(), which
// instantiates lithe-webgpu-test.wasm (tests/webgpu/*.c) on a device with the JS command recorder
// (bindings/js/src/webgpu.js), counting dispatches by shader. Without an adapter the tests skip,
// saying why, unless LITHE_REQUIRE_WEBGPU is set (not to 0), as test.sh does: then the adapter
// test fails.
//   LITHE_WEBGPU_TEST_WASM: the module (default build/wasm-webgpu/bindings/js/lithe-webgpu-test.wasm)
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, '../..');
process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json'; // Debian's chromium package
export const required = !!process.env.LITHE_REQUIRE_WEBGPU && process.env.LITHE_REQUIRE_WEBGPU !== '0';
export const wasmPath = process.env.LITHE_WEBGPU_TEST_WASM ??
  path.join(root, 'build/wasm-webgpu/bindings/js/lithe-webgpu-test.wasm');

const { moduleImports } = await import('../../bindings/js/src/loader.js');
const { requestDevice, webgpuImports, Asyncify } = await import('../../bindings/js/src/webgpu.js');

export let gpu = null;
let why = '';
try {
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  gpu = create([]);
} catch (e) {
  why = `the webgpu package did not load (${e.message}); run npm ci in tests/webgpu`;
}
export const found = gpu ? await requestDevice(gpu) : { device: null, reason: why };
export const device = found.device;
export const skip = device ? false : `no WebGPU device: ${found.reason} (VK_ICD_FILENAMES=${process.env.VK_ICD_FILENAMES})`;

// The test every file starts with: fails (not skips) without an adapter when LITHE_REQUIRE_WEBGPU is set.
export function adapterTest(what = '') {
  test(`a WebGPU adapter is found${what ? ' ' + what : ''} (LITHE_REQUIRE_WEBGPU)`, { skip: required ? false : skip }, () => {
    assert.ok(device, `LITHE_REQUIRE_WEBGPU is set and ${skip}: install chromium (its SwiftShader ICD) and run npm ci in tests/webgpu`);
    console.log(`adapter: ${found.info?.vendor ?? '?'} / ${found.info?.architecture ?? '?'}`);
  });
}

// One instance of the test module on `dev` (null: a page that did not ask for WebGPU). call()
// runs an export through Asyncify (the read-backs); wg.byShader counts dispatches by (shader, OP).
export async function load(dev) {
  const module = new WebAssembly.Module(fs.readFileSync(wasmPath));
  const out = [];
  let instance = null;
  const asyncify = new Asyncify();
  const getMemory = () => instance.exports.memory;
  const base = moduleImports(module, getMemory, (fd, text) => out.push(text));
  const wg = webgpuImports(dev, getMemory, asyncify, found.info);
  const byShader = new Map();
  const inner = wg.imports.lithe_webgpu.dispatch;
  wg.imports.lithe_webgpu.dispatch = (shader, ...rest) => {
    const k = `${shader}:${rest[2]}`;
    byShader.set(k, (byShader.get(k) ?? 0) + 1);
    return inner(shader, ...rest);
  };
  wg.byShader = byShader;
  instance = await WebAssembly.instantiate(module, { ...base, ...wg.imports });
  instance.exports._initialize?.();
  asyncify.attach(instance, instance.exports.malloc);
  return { instance, asyncify, wg, out, call: (name, ...a) => asyncify.call(name, ...a) };
}
