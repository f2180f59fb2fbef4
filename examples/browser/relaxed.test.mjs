// The relaxed-SIMD core (dist/lithe-relaxed-simd.wasm: f32x4.relaxed_madd in the GEMM, its opcodes
// rewritten to the standard encoding by bindings/js/scripts/relaxed-opcodes.mjs) in Debian's
// Chromium, which has relaxed SIMD: init() picks it by feature detection, and its predictions match
// the plain SIMD128 core's (init({ relaxed: false }), another page) and the native command's, on
// the fixture MLP (batch 64: the GEMM microkernels; batch 1: the GEMV) and on a TF.js model through
// the importer module. Each page imports the package's src/ as it is (no bundler).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { nativeFixture, maxAbsDiff } from '../../bindings/js/test/fixtures.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(here, '../../bindings/js');
let fx, server, origin, browser;

before(async () => {
  fx = nativeFixture();
  const routes = { '/model.lithe': path.join(fx.work, 'model.lithe') };
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
  const res = await page.evaluate(async ({ options, x }) => {
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
    return { info, relaxedValid: lithe.relaxedSimdSupported(), y64, y1, ytf };
  }, { options, x: Array.from(fx.x.subarray(0, 64 * 784)) });
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
});
