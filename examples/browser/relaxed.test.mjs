// The relaxed-SIMD core (dist/lithe-relaxed-simd.wasm: f32x4.relaxed_madd in the GEMM, its opcodes
// rewritten to the standard encoding by bindings/js/scripts/relaxed-opcodes.mjs) in Debian's
// Chromium, which has relaxed SIMD: init() picks it by feature detection, and its predictions match
// the plain SIMD128 core's (init({ relaxed: false }), another page) and the native command's, on
// the fixture MLP (batch 64: the GEMM microkernels; batch 1: the GEMV), on a TF.js model and on a
// torch CNN (within 1e-5 of torch) through the relaxed core's own importer module; and the MLP with
// int8 weights (its int8 GEMM: i32x4.relaxed_dot_i8x16_i7x16_add_s) as the SIMD128 core's and native's. Each page imports the package's src/ as it is (no bundler).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { nativeFixture, maxAbsDiff, npyRead } from '../../bindings/js/test/fixtures.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(here, '../../bindings/js');
let fx, server, origin, browser, cnn;

before(async () => {
  fx = nativeFixture();
  const routes = { '/model.lithe': path.join(fx.work, 'model.lithe'), '/q8.lithe': path.join(fx.work, 'q8.lithe') };
  // the fixture MLP with int8 weights (the native command's convert) and its native int8 output
  fx.run(['convert', '--weights', 'int8', 'model.lithe', 'q8.lithe']);
  fx.run(['run', 'q8.lithe', '--input', 'x.npy', '--output', 'q8.npy']);
  // ... and quantized statically (a QDQ graph: int8 activations with static scales, whose codes the
  // relaxed core's int8 GEMM reads through the SIMD128 tile, whole, not in the relaxed dot's two halves)
  fx.run(['quantize', 'model.lithe', '--calibrate', 'x.npy', '--output', 'qs.onnx']);
  fx.run(['run', 'qs.onnx', '--input', 'x.npy', '--output', 'qs.npy']);
  routes['/qs.onnx'] = path.join(fx.work, 'qs.onnx');
  // a small torch CNN (bindings/js/test/onnx_golden.py: torch 1.13 the oracle): its convolutions run
  // in the importer module, the relaxed core's own (lithe-importers-relaxed-simd.wasm)
  const dir = path.join(fx.work, 'cnn');
  fs.mkdirSync(dir);
  const r = spawnSync('/usr/bin/python3', [path.join(pkgDir, 'test/onnx_golden.py'), dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  routes['/cnn.onnx'] = path.join(dir, 'cnn.onnx');
  cnn = { x: npyRead(path.join(dir, 'x.npy')), y: npyRead(path.join(dir, 'y.npy')) };
  server = http.createServer((req, res) => {
    const p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let file = routes[p];
    if (p === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>relaxed</title>');
    if (/^\/(src|dist)\/[\w.-]+$/.test(p)) file = path.join(pkgDir, p);
    if (!file || !fs.existsSync(file)) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': p.endsWith('.wasm') ? 'application/wasm' : p.endsWith('.js') ? 'text/javascript' : 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage', '--disable-background-networking'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
  fx?.cleanup();
});

// one page, one module instance: init(options), the MLP at batch 64 and 1, a tiny TF.js dense model
async function run(options) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${origin}/`);
  const res = await page.evaluate(async ({ options, x, cnnX }) => {
    const lithe = await import('/src/index.js');
    const info = await lithe.init(options);
    const model = await lithe.load('/model.lithe');
    const xs = Float32Array.from(x);
    const y64 = Array.from(model.predict(lithe.tensor(xs, [64, 784])).data);
    const y1 = Array.from(model.predict(lithe.tensor(xs.subarray(784 * 5, 784 * 6), [1, 784])).data);
    // a TF.js layers model through the importer module (the SIMD128 build's, which the relaxed core links)
    const tf = await lithe.load({
      modelJson: { modelTopology: { class_name: 'Sequential', config: { name: 's', layers: [
        { class_name: 'Dense', config: { name: 'd', units: 2, use_bias: false, batch_input_shape: [null, 3] } }] } },
      weightsManifest: [{ paths: ['w.bin'], weights: [{ name: 'd/kernel', shape: [3, 2], dtype: 'float32' }] }] },
      weights: new Float32Array([1, 0, 0, 1, 1, 1]).buffer,
    });
    const ytf = Array.from(tf.predict(new Float32Array([1, 2, 3]), [1, 3]).data);
    // int8 weights: the int8 GEMM (relaxed core: i32x4.relaxed_dot_i8x16_i7x16_add_s)
    const q8 = await lithe.load('/q8.lithe');
    const yq64 = Array.from(q8.predict(lithe.tensor(xs, [64, 784])).data);
    const yq1 = Array.from(q8.predict(lithe.tensor(xs.subarray(784 * 5, 784 * 6), [1, 784])).data);
    const qs = await lithe.load('/qs.onnx');
    const yqs = Array.from(qs.predict(lithe.tensor(xs, [64, 784])).data);
    const c = await lithe.load('/cnn.onnx');
    const ycnn = Array.from(c.predict(Float32Array.from(cnnX.data), cnnX.shape).data);
    return { info, relaxedValid: lithe.relaxedSimdSupported(), y64, y1, ytf, ycnn, yq64, yq1, yqs };
  }, { options, x: Array.from(fx.x.subarray(0, 64 * 784)), cnnX: { data: Array.from(cnn.x.data), shape: cnn.x.shape } });
  await page.close();
  assert.deepEqual(errors, []);
  return res;
}

test('Chromium: init() picks the relaxed-SIMD core, which predicts as the SIMD128 core and native lithe', async (t) => {
  const relaxed = await run({ threads: 1 });
  assert.equal(relaxed.relaxedValid, true, "Chromium validates f32x4.relaxed_madd (the loader's probe)");
  assert.equal(relaxed.info.build, 'relaxed-simd');
  const plain = await run({ threads: 1, relaxed: false });
  assert.equal(plain.info.build, 'simd');
  assert.equal(relaxed.y64.length, 64 * 10);
  // the fused madd rounds once where the SIMD128 core rounds twice: close, not the same bits
  const differ = relaxed.y64.filter((v, i) => v !== plain.y64[i]).length;
  t.diagnostic(`relaxed vs SIMD128: ${differ} of ${relaxed.y64.length} outputs differ, by at most ${maxAbsDiff(relaxed.y64, plain.y64)}`);
  assert.ok(maxAbsDiff(relaxed.y64, plain.y64) <= 1e-6, `relaxed vs SIMD128, batch 64: ${maxAbsDiff(relaxed.y64, plain.y64)}`);
  assert.ok(maxAbsDiff(relaxed.y64, fx.golden.data) <= 1e-6, 'relaxed vs native, batch 64');
  assert.ok(maxAbsDiff(relaxed.y1, fx.golden.data.subarray(50, 60)) <= 1e-6, 'relaxed vs native, batch 1');
  assert.ok(maxAbsDiff(plain.y64, fx.golden.data) <= 1e-6, 'SIMD128 vs native, batch 64');
  assert.deepEqual(relaxed.ytf, plain.ytf);
  assert.deepEqual(relaxed.ytf, [4, 5]);
  assert.ok(maxAbsDiff(relaxed.ycnn, cnn.y.data) <= 1e-5, `relaxed CNN vs torch: ${maxAbsDiff(relaxed.ycnn, cnn.y.data)}`);
  assert.ok(maxAbsDiff(plain.ycnn, cnn.y.data) <= 1e-5, 'SIMD128 CNN vs torch');
  t.diagnostic(`CNN: relaxed vs SIMD128 at most ${maxAbsDiff(relaxed.ycnn, plain.ycnn)}`);
  // int8: exact int32 sums in both cores (the relaxed dot's second operand is the 7-bit activation
  // codes), the same epilogue: the same bits, and the native int8 kernels' output
  const q8 = npyRead(path.join(fx.work, 'q8.npy')).data;
  assert.deepEqual(relaxed.yq64, plain.yq64, 'int8: relaxed = SIMD128, bit for bit');
  assert.deepEqual(relaxed.yq1, relaxed.yq64.slice(50, 60), 'int8: batch 1 = row 5 of batch 64');
  assert.ok(maxAbsDiff(relaxed.yq64, q8) <= 2e-6, `int8: relaxed vs native ${maxAbsDiff(relaxed.yq64, q8)}`);
  // static int8 (QDQ): the same exact sums again, and the native command's output
  const qs = npyRead(path.join(fx.work, 'qs.npy')).data;
  assert.equal(relaxed.yqs.length, 64 * 10);
  assert.deepEqual(relaxed.yqs, plain.yqs, 'static int8: relaxed = SIMD128, bit for bit');
  assert.ok(maxAbsDiff(relaxed.yqs, qs) <= 2e-6, `static int8: relaxed vs native ${maxAbsDiff(relaxed.yqs, qs)}`);
});
