// An int8 QDQ CNN from an .onnx file (3x3, depthwise 3x3 / 2, 1x1 and 3x3 convolutions, uint8
// activations, int8 per-channel weights: test/qconv_golden.py) against its float64 evaluation by the
// QDQ graph's definition (the oracle, never lithe), and against onnxruntime-node where bench's
// node_modules has it. In the npm package the fused convolutions run the CPU backend's conv_q8 in
// the importer module (backends/cpu/conv/qconv.c; the SIMD128 tile qconv_wasm.c in the SIMD128
// core): exact int32 sums scaled once, so every output is the float64 one to float32 rounding, but
// where that rounding moves a value across a half-step of a later QuantizeLinear (one output step).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { npyRead, maxAbsDiff, pkgDir } from './fixtures.mjs';

let work = null;
before(async () => {
  await lithe.init();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-js-qconv-'));
  const r = spawnSync('/usr/bin/python3', [path.join(pkgDir, 'test/qconv_golden.py'), work], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
after(() => work && fs.rmSync(work, { recursive: true, force: true }));

test('int8 QDQ convolutions: the float64 QDQ graph within one output step', async () => {
  assert.ok(lithe.usingSimd(), 'the SIMD128 core');
  const x = npyRead(path.join(work, 'qconv_x.npy')), golden = npyRead(path.join(work, 'qconv_y.npy'));
  const step = Number(fs.readFileSync(path.join(work, 'qconv_step.txt'), 'utf8'));
  const model = await lithe.load(path.join(work, 'qconv.onnx'));
  try {
    const y = model.predict(x.data, x.shape);
    assert.deepEqual(y.shape, golden.shape);
    let off = 0;
    for (let i = 0; i < y.data.length; i++) if (Math.abs(y.data[i] - golden.data[i]) > 1e-5) off++;
    const worst = maxAbsDiff(y.data, golden.data);
    let ortWorst = null;
    try {
      const ort = createRequire(path.join(pkgDir, '../../bench/package.json'))('onnxruntime-node');
      const sess = await ort.InferenceSession.create(path.join(work, 'qconv.onnx'));
      const r = await sess.run({ [sess.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) });
      ortWorst = maxAbsDiff(y.data, await r[sess.outputNames[0]].getData());
    } catch { /* bench/node_modules not installed: the float64 oracle alone */ }
    console.log(`# int8 QDQ CNN: max |lithe - float64| ${worst.toExponential(2)} (step ${step.toExponential(2)}), ` +
                `${off} of ${y.data.length} outputs off the float64 code; onnxruntime-node: ${ortWorst ?? 'not installed'}`);
    assert.ok(worst <= step * 1.001 + 1e-6, `largest difference from float64: ${worst} (one step ${step})`);
    assert.ok(off <= y.data.length / 100, `${off} outputs off the float64 code`);
    if (ortWorst !== null) assert.ok(ortWorst <= 2 * step, `largest difference from onnxruntime-node: ${ortWorst}`);
    // an image alone gives its rows of the batch's output, bit for bit
    const n1 = x.data.length / x.shape[0];
    const one = model.predict(x.data.subarray(n1, 2 * n1), [1, ...x.shape.slice(1)]);
    assert.deepEqual(one.data, y.data.subarray(y.data.length / 2));
  } finally {
    model.dispose();
  }
});
