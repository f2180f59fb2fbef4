// Model.compressWeights (lithe_model_compress_weights, issue 24) in the npm package: a model
// trained by the native command, compressed in WebAssembly, saves the same bytes as the native
// `lithe convert --weights` (the oracle: the native build, not the wasm under test), loads back
// compact, and predicts within the quantization error of the native int8 predictions.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { nativeFixture, npyRead, maxAbsDiff } from './fixtures.mjs';

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
