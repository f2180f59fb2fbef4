// The row kernels of adapters that run on the CPU (softmax and layernorm, one invocation per row
// and no barrier: backends/webgpu/shaders/*_cpu.wgsl) and the workgroup kernels of real GPUs, each
// forced in turn, against the CPU backend in Node on Dawn over SwiftShader:
// lithe-webgpu-test.wasm's tests/webgpu/test_webgpu_cpu.c. Without an adapter the tests skip,
// saying why, unless LITHE_REQUIRE_WEBGPU is set (not to 0), as test.sh does: then they fail.
import test from 'node:test';
import assert from 'node:assert/strict';
import { adapterTest, device, found, load, skip } from './harness.mjs';

adapterTest('for the row kernels');

test('softmax and layernorm: the CPU adapter\'s one-invocation-per-row kernels and the workgroup kernels match the CPU backend', { skip }, async () => {
  const m = await load(device);
  const ids = m.instance.exports.wgt_rows_ids();
  assert.ok(ids >= 0, m.out.join('\n'));
  const cpuAdapter = found.info?.architecture === 'swiftshader' || found.info?.isFallbackAdapter === true;
  assert.equal(!!(ids >> 24 & 1), cpuAdapter, 'the row kernels follow the adapter (features() bit 1)');
  for (const cpuRows of [1, 0]) {
    m.wg.byShader.clear();
    const fails = await m.call('wgt_rows', cpuRows);
    assert.equal(fails, 0, m.out.join(''));
    // the variant asked for is the one dispatched
    for (const [what, id] of [['softmax_cpu', ids & 255], ['layernorm_cpu', ids >> 8 & 255], ['layernorm_dx_cpu', ids >> 16 & 255]]) {
      const n = m.wg.byShader.get(`${id}:0`) ?? 0;
      if (cpuRows) assert.ok(n > 0, `${what} was not dispatched`);
      else assert.equal(n, 0, `${what} dispatched with the workgroup kernels forced`);
    }
  }
  assert.match(m.out.join(''), /rows variant: one invocation per row/);
  assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
});

test('1x1 convolutions: the CPU adapter\'s vec4 GEMM route (bias per channel, fused activation, padded 7 x 7 rows) and the direct kernel match the CPU backend', { skip }, async () => {
  const m = await load(device);
  const v4 = m.instance.exports.wgt_rows_ids() >> 25 & 63;
  for (const cpuGemm of [1, 0]) {
    m.wg.byShader.clear();
    const fails = await m.call('wgt_conv1x1', cpuGemm);
    assert.equal(fails, 0, m.out.join(''));
    const n = m.wg.byShader.get(`${v4}:0`) ?? 0;
    if (cpuGemm) assert.ok(n > 0, 'no 1x1 convolution went through gemm_v4');
    else assert.equal(n, 0, 'gemm_v4 dispatched with the direct kernel forced');
  }
  assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
});
