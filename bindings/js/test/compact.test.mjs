// Model.compressWeights (lithe_model_compress_weights, issue 24) in the npm package: a model
// trained by the native command, compressed in WebAssembly, saves the same bytes as the native
// `lithe convert --weights` (the oracle: the native build, not the wasm under test), loads back
// compact, and predicts within the quantization error of the native int8 predictions.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { nativeFixture, npyRead, npyWrite, maxAbsDiff } from './fixtures.mjs';

let fx = null;
before(async () => {
  await lithe.init();
  fx = nativeFixture();
});
after(() => fx && fx.cleanup());

for (const [dtype, flag, tol] of [['int8', 'int8', 0.02], ['float16', 'f16', 1e-3], ['bfloat16', 'bf16', 1e-2]]) {
  test(`compressWeights('${dtype}') = lithe convert --weights ${flag}`, async () => {
    fx.run(['convert', '--weights', flag, 'model.lithe', `${flag}.lithe`]);
    fx.run(['run', `${flag}.lithe`, '--input', 'x.npy', '--output', `${flag}.npy`]);
    const native = new Uint8Array(fs.readFileSync(path.join(fx.work, `${flag}.lithe`)));
    const m = await lithe.load(fx.modelBytes);
    assert.equal(m.compressWeights(dtype), 3);
    const bytes = m.save();
    assert.deepEqual(bytes, native);
    assert.ok(bytes.length * (dtype === 'int8' ? 3.5 : 1.9) < fx.modelBytes.length);
    const y = m.predict(fx.x, [64, 784]);
    assert.ok(maxAbsDiff(y.data, npyRead(path.join(fx.work, `${flag}.npy`)).data) < tol);
    assert.ok(maxAbsDiff(y.data, fx.golden.data) < 2 * tol);
    const back = await lithe.load(bytes);
    assert.deepEqual(back.predict(fx.x, [64, 784]).data, y.data);
  });
}

// The SIMD128 core's int8 GEMM (backends/cpu/gemm/qgemm_wasmsimd.c, issue 24): an int8 model's
// predictions, batch 64 (4 x 2 tiles) and batch 1 (edge rows), are the native int8 kernels' (AVX2 /
// VNNI here: the same exact int32 sums, quantized activations and epilogue) to float32 rounding in
// the softmax, where the float path (W decoded, activations unquantized) is ~1e-3 away.
test('int8 weights run the int8 GEMM in WebAssembly: the native int8 output', async () => {
  fx.run(['convert', '--weights', 'int8', 'model.lithe', 'q8.lithe']);
  fx.run(['run', 'q8.lithe', '--input', 'x.npy', '--output', 'q8.npy']);
  npyWrite(path.join(fx.work, 'x1.npy'), [1, 784], fx.x.subarray(784 * 5, 784 * 6));
  fx.run(['run', 'q8.lithe', '--input', 'x1.npy', '--output', 'q8_1.npy']);
  const m = await lithe.load(new Uint8Array(fs.readFileSync(path.join(fx.work, 'q8.lithe'))));
  const y64 = m.predict(fx.x, [64, 784]).data, y1 = m.predict(fx.x.subarray(784 * 5, 784 * 6), [1, 784]).data;
  const d64 = maxAbsDiff(y64, npyRead(path.join(fx.work, 'q8.npy')).data);
  const d1 = maxAbsDiff(y1, npyRead(path.join(fx.work, 'q8_1.npy')).data);
  assert.ok(d64 <= 2e-6 && d1 <= 2e-6, `wasm int8 vs native int8: ${d64} (batch 64), ${d1} (batch 1)`);
  assert.ok(maxAbsDiff(y1, y64.subarray(50, 60)) <= 2e-6, 'batch 1 = row 5 of batch 64');
});

test('compressWeights refuses an unknown dtype', async () => {
  const m = await lithe.load(fx.modelBytes);
  assert.throws(() => m.compressWeights('int4'), /int4/);
});

test("compressWeights('int8', { match }) = lithe convert --weights int8 --match", async () => {
  fx.run(['convert', '--weights', 'int8', '--match', 'relu*', 'model.lithe', 'head.lithe']);
  const native = new Uint8Array(fs.readFileSync(path.join(fx.work, 'head.lithe')));
  const m = await lithe.load(fx.modelBytes);
  assert.throws(() => m.compressWeights('int8', { match: 'nothing*' }), /no dense layer/);
  const n = m.compressWeights('int8', { match: 'relu*' });
  assert.ok(n >= 1 && n < 3, `${n} weights converted`); // the head stays float32
  assert.deepEqual(m.save(), native);
});
