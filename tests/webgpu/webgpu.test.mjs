// The WebGPU backend in Node: Dawn's Node bindings (npm's `webgpu`) over SwiftShader, Chromium's
// Vulkan implementation on the CPU (Dawn refuses Debian 12's lavapipe). Runs
// lithe-webgpu-test.wasm (preset wasm-webgpu: tests/webgpu/test_webgpu.c): WebGPU's own checks --
// every primitive present, the loss read back once, the GEMM with each WGSL variant, the dispatches,
// submits and read-backs of one MLP training step, the npm API (the shared primitive and model
// cases: cases.test.mjs). Without an adapter the tests skip, saying why, unless
// LITHE_REQUIRE_WEBGPU is set (not to 0), as test.sh does: then they fail.
//   LITHE_WEBGPU_TEST_WASM: the module (default build/wasm-webgpu/bindings/js/lithe-webgpu-test.wasm)
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { adapterTest, device, found, gpu, load, skip, wasmPath } from './harness.mjs';

adapterTest();

test('every primitive is implemented (none refused as unsupported)', { skip }, async () => {
  const m = await load(device);
  const fails = await m.call('wgt_unsupported');
  assert.equal(fails, 0, m.out.join('\n'));
});

test('the loss read back once and clipped Adam in one dispatch match the CPU', { skip }, async () => {
  const m = await load(device);
  const fails = await m.call('wgt_once');
  assert.equal(fails, 0, m.out.join('\n'));
  assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
});

test('the GEMM matches the CPU with each variant the adapter offers (subgroups, tiled)', { skip }, async () => {
  const m = await load(device);
  const sg = m.instance.exports.wgt_subgroups(-1);
  console.log(`subgroups: ${sg ? 'yes' : 'no'} (adapter subgroup sizes ${found.info?.subgroupMinSize ?? '?'}..${found.info?.subgroupMaxSize ?? '?'})`);
  const fails = await m.call('wgt_gemm_variants');
  assert.equal(fails, 0, m.out.join('\n'));
  assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
  console.log((m.out.join('').match(/gemm variant: [^\n]*?\)/g) ?? []).join('; '));
});

test('one MLP training step: dispatches, one submit plus the loss read-back', { skip }, async () => {
  const m = await load(device);
  assert.equal(await m.call('wgt_step_setup', 0), 0, m.out.join('\n'));
  for (let i = 0; i < 2; i++) assert.equal(await m.call('wgt_step'), 0, m.out.join('\n')); // warm: pipelines, pool
  const s0 = { ...m.wg.stats };
  const steps = 5;
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) assert.equal(await m.call('wgt_step'), 0, m.out.join('\n'));
  const ms = (performance.now() - t0) / steps;
  const per = (k) => (m.wg.stats[k] - s0[k]) / steps;
  console.log(`MLP 784-64-32-10 batch 32, Adam: ${per('dispatches')} dispatches, ${per('submits')} submits, ` +
              `${per('readbacks')} read-backs, ${per('uploads')} uploads, ${per('pipelines')} new pipelines, ` +
              `${per('buffers')} new buffers per step; ${ms.toFixed(2)} ms/step on SwiftShader`);
  assert.equal(per('pipelines'), 0, 'a repeated step compiles nothing');
  assert.equal(per('buffers'), 0, 'a repeated step allocates from the pool only');
  assert.ok(per('submits') <= per('readbacks') + 1, 'at most one submit per step besides the read-backs');
  m.instance.exports.wgt_step_free();
  assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
});

test('an MLP with dropout trains on WebGPU (dropout_mask in WGSL)', { skip }, async () => {
  const m = await load(device);
  assert.equal(await m.call('wgt_step_setup', 0.2), 0, m.out.join('\n'));
  for (let i = 0; i < 2; i++) assert.equal(await m.call('wgt_step'), 0, m.out.join('\n'));
  m.instance.exports.wgt_step_free();
  assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
});

test('without a device the backend is refused with the reason', async () => {
  const m = await load(null);
  const ex = m.instance.exports;
  const slot = ex.malloc(4);
  const name = ex.malloc(8);
  new Uint8Array(ex.memory.buffer).set(new TextEncoder().encode('webgpu\0'), name);
  assert.equal(ex.lithe_backend_get(name, slot), 7);
  const msgPtr = ex.lithe_last_error();
  const bytes = new Uint8Array(ex.memory.buffer, msgPtr, 200);
  const msg = new TextDecoder().decode(bytes.slice(0, bytes.indexOf(0)));
  assert.match(msg, /webgpu: no device/);
});

// The npm API: init({ device: 'webgpu' }) (here with the conformance module, which holds the
// package's C-mirror layer too), a model moved to the GPU, predictions and training steps as
// promises, against the same model on the CPU module.
test("npm API: init({ device: 'webgpu' }), model.to('webgpu'), predictAsync / trainStepAsync vs the CPU", { skip }, async () => {
  const lithe = await import('../../bindings/js/src/index.js');
  const info = await lithe.init({ device: 'webgpu', gpu, wasm: fs.readFileSync(wasmPath) });
  assert.equal(info.device, 'webgpu');
  const r = lithe.c();
  const lenPtr = r.malloc(4);
  const bp = r.exports.wgt_mlp_bytes(lenPtr);
  assert.ok(bp, 'the fixture model was made');
  const bytes = r.u8().slice(bp, bp + r.readU32(lenPtr));
  r.lithe_buffer_free(bp);
  r.free(lenPtr);
  const onGpu = lithe.loadBytes(bytes), onCpu = lithe.loadBytes(bytes);
  await onGpu.to('webgpu');
  const x = new Float32Array(8 * 20).map((_, i) => Math.sin(i));
  assert.throws(() => onGpu.predict(x, [8, 20]), /asynchronously/, 'a synchronous read-back is refused with a clear error');
  const p0 = await onGpu.predictAsync(x, [8, 20]), c0 = onCpu.predict(x, [8, 20]);
  for (let i = 0; i < c0.data.length; i++) assert.ok(Math.abs(p0.data[i] - c0.data[i]) < 1e-5, `prediction ${i}`);
  const og = lithe.adam({ learnRate: 0.01 }), oc = lithe.adam({ learnRate: 0.01 });
  const y = Int32Array.from({ length: 8 }, (_, i) => i % 10);
  const s0 = lithe.device().stats;
  for (let step = 0; step < 10; step++) {
    const lg = await onGpu.trainStepAsync({ x: lithe.tensor(x, [8, 20]), y, optimizer: og });
    const lc = onCpu.trainStep({ x: lithe.tensor(x, [8, 20]), y, optimizer: oc });
    assert.ok(Math.abs(lg - lc) < 1e-4, `loss at step ${step}: webgpu ${lg}, cpu ${lc}`);
  }
  const s1 = lithe.device().stats;
  const per = (k) => (s1[k] - s0[k]) / 10;
  console.log(`npm trainStepAsync (20-48-32-10 MLP, batch 8): ${per('dispatches')} dispatches, ${per('clears')} clears, ` +
              `${per('submits')} submits, ${per('readbacks')} read-backs, ${per('uploads')} uploads per step`);
  // issue 27: the loss (with the guesses' range check) is the step's one read-back; the forward
  // pass rides in its submit, the backward pass and the update in one more
  assert.equal(per('readbacks'), 1, 'one read-back per step: the loss');
  assert.ok(per('submits') <= 2, `at most one submit per step plus the loss read-back's, got ${per('submits')}`);
  // labels outside [0, C) are refused before anything goes up, with the CPU's message
  await assert.rejects(onGpu.trainStepAsync({ x: lithe.tensor(x, [8, 20]), y: Int32Array.from({ length: 8 }, (_, i) => (i === 3 ? 10 : 0)), optimizer: og }),
                       /label 10 of row 3 outside \[0, 10\)/);
  const p1 = await onGpu.predictAsync(x, [8, 20]), c1 = onCpu.predict(x, [8, 20]);
  for (let i = 0; i < c1.data.length; i++) assert.ok(Math.abs(p1.data[i] - c1.data[i]) < 1e-4, `prediction ${i} after 10 steps`);
});

test("npm API: init({ device: 'webgpu' }) without an adapter falls back to the CPU with a reason", async () => {
  const { requestDevice } = await import('../../bindings/js/src/webgpu.js');
  const none = await requestDevice({ requestAdapter: async () => null });
  assert.equal(none.device, null);
  assert.match(none.reason, /no WebGPU adapter/);
});
