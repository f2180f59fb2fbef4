// Model.quantizeStatic (lithe_model_quantize_static, issue 24 item 3) in the npm package: a model
// trained by the native command, quantized in WebAssembly on the same calibration rows, saves a file
// of the native `lithe quantize --calibrate`'s size (the oracle: the native build, not the wasm under
// test; the bytes differ where the float GEMMs' summation orders move a calibrated range by an ulp)
// and predicts what the native int8 model predicts; bad calibration rows throw.
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

test('quantizeStatic(x) = lithe quantize --calibrate x.npy', async () => {
  fx.run(['quantize', 'model.lithe', '--calibrate', 'x.npy', '--output', 'q.lithe']);
  fx.run(['run', 'q.lithe', '--input', 'x.npy', '--output', 'q.npy']);
  const m = await lithe.load(fx.modelBytes);
  const q = m.quantizeStatic(fx.x, [64, 784]);
  assert.equal(q.quantizedNodes, 3);
  const bytes = q.save();
  assert.equal(bytes.length, fs.statSync(path.join(fx.work, 'q.lithe')).size);
  assert.ok(bytes.length * 3.5 < fx.modelBytes.length);
  const y = q.predict(fx.x, [64, 784]);
  const dn = maxAbsDiff(y.data, npyRead(path.join(fx.work, 'q.npy')).data);
  console.log(`quantizeStatic: max |wasm int8 - native int8| ${dn}`);
  assert.ok(dn < 5e-3);
  assert.ok(maxAbsDiff(y.data, fx.golden.data) < 0.05); // close to the float model
  assert.ok(maxAbsDiff(m.predict(fx.x, [64, 784]).data, fx.golden.data) < 1e-5); // m unchanged
});

test('quantizeStatic refuses bad calibration rows', async () => {
  const m = await lithe.load(fx.modelBytes);
  assert.throws(() => m.quantizeStatic(new Float32Array(4 * 783), [4, 783]), /calibration rows/);
  assert.throws(() => m.quantizeStatic(new Float32Array(4 * 784).fill(NaN), [4, 784]), /calibration element 0 is nan/);
  assert.throws(() => m.quantizeStatic(new Float32Array(0), [0, 784]), /empty/);
});
