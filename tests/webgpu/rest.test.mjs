// The WebGPU backend in Node, part 2 (tests/webgpu/test_webgpu_rest.c in lithe-webgpu-test.wasm):
// the id, sequence, recurrent, attention and int8 primitives against the CPU backend, then whole
// native models (text, BiLSTM tagger, attention, SparseLinear, siamese) predicting and taking ten
// Adam steps as on the CPU. Dawn's Node bindings (npm's webgpu) over SwiftShader, as
// webgpu.test.mjs; without an adapter the tests skip unless LITHE_REQUIRE_WEBGPU is set (not 0).
import test from 'node:test';
import assert from 'node:assert/strict';
import { adapterTest, device, load, skip } from './harness.mjs';

adapterTest('for the native models');

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
