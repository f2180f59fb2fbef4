// Depthwise convolutions and max pooling from an .onnx file (torch 1.13 the oracle, run by
// test/dw_golden.py): in the SIMD128 core they run the SIMD table's convolution-only kernels,
// which the npm package's one-thread cores leave to the importer module
// (backends/cpu/simd/conv_kernels.c): long-row taps (dwconv_taps) with the fused ReLU / ReLU6,
// the padded copies (copy_rows), stride 2's column phases (split_rows), maxpool2x2_rows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { npyRead, maxAbsDiff, pkgDir } from './fixtures.mjs';

let work = null;
before(async () => {
  await lithe.init();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-js-dw-'));
  const r = spawnSync('/usr/bin/python3', [path.join(pkgDir, 'test/dw_golden.py'), work], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
after(() => work && fs.rmSync(work, { recursive: true, force: true }));

test('depthwise convolutions and max pooling: torch within 1e-5', async () => {
  assert.ok(lithe.usingSimd(), 'the SIMD128 core');
  const x = npyRead(path.join(work, 'dw_x.npy')), golden = npyRead(path.join(work, 'dw_y.npy'));
  const model = await lithe.load(path.join(work, 'dw.onnx'));
  try {
    const y = model.predict(x.data, x.shape);
    assert.deepEqual(y.shape, golden.shape);
    const worst = maxAbsDiff(y.data, golden.data);
    assert.ok(worst <= 1e-5, `largest difference from torch: ${worst}`);
    const one = model.predict(x.data.subarray(0, 3 * 22 * 22), [1, 3, 22, 22]);
    assert.ok(maxAbsDiff(one.data, golden.data.subarray(0, one.data.length)) <= 1e-5, 'batch 1');
  } finally {
    model.dispose();
  }
});
