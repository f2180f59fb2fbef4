// The demo end to end in Debian's Chromium, driven by playwright-core: the page loads the model
// trained natively on nine classes, the test picks the ankle boots it offers (their labels come
// from the dataset files, not from the page), fine-tunes, and checks that the loss falls and that
// held-out ankle boots are now recognised. A screenshot is saved (LITHE_DEMO_SCREENSHOT, default
// build/web/demo.png). LITHE_NATIVE names the native lithe command that trains the model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repo = path.resolve(webDir, '..');
const shot = path.resolve(repo, process.env.LITHE_DEMO_SCREENSHOT ?? 'build/web/demo.png');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-demo-'));
const labels = zlib.gunzipSync(fs.readFileSync('/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz')).subarray(8);
let server, isoServer, browser, url, isoUrl;

// serve.mjs on a free port (extra: e.g. --isolate); resolves with the server and its URL
function serve(model, extra = []) {
  const proc = spawn(process.execPath, [path.join(webDir, 'serve.mjs'), '--port', '0', '--model', model, ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) resolve([proc, m[1]]);
    });
    proc.once('exit', (code) => reject(new Error(`serve.mjs exited with ${code}: ${out}`)));
  });
}

before(async () => {
  // the model, by the main job's command on the first nine classes (small, to keep CI quick)
  const native = path.resolve(repo, process.env.LITHE_NATIVE ?? 'build/ci/tools/lithe/lithe');
  const model = path.join(work, 'fashion9.lithe');
  const r = spawnSync(native, ['train-mnist', '--classes', '9', '--epochs', '1', '--limit', '12000', '--save', model], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /Softmax|softmax/);
  [server, url] = await serve(model);
  [isoServer, isoUrl] = await serve(model, ['--isolate']);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update',
      '--disable-dev-shm-usage', // containers often have a small /dev/shm
      '--disable-sync'], // playwright gives each launch a fresh --user-data-dir of its own
  });
});

after(async () => {
  await browser?.close();
  server?.kill();
  isoServer?.kill();
  fs.rmSync(work, { recursive: true, force: true });
});

test('the demo: predictions, a new class picked, fine-tuned in the browser, then recognised', async () => {
  const page = await browser.newPage({ viewport: { width: 1000, height: 1800 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.goto(url);
  await page.waitForFunction(() => window.demo?.ready || window.demo?.error, null, { timeout: 60_000 });
  const ready = await page.evaluate(() => ({ error: window.demo.error, simd: window.demo.simd, before: window.demo.before, startMs: window.demo.startMs }));
  assert.equal(ready.error, null);
  assert.equal(ready.simd, true, 'Chromium supports SIMD128: the SIMD build is picked');
  assert.ok(ready.before.oldAcc > 0.7, `the nine known classes: ${ready.before.oldAcc}`);
  assert.equal(ready.before.newRecall, 0, 'no ankle boot can be recognised before');
  assert.equal(await page.locator('#before .cell').count(), 24);

  // pick the ankle boots (label 9) in the gallery, by the dataset's labels
  const cells = page.locator('#gallery .cell');
  const indices = await cells.evaluateAll((els) => els.map((e) => Number(e.dataset.index)));
  let picked = 0;
  for (let i = 0; i < indices.length; i++)
    if (labels[indices[i]] === 9) {
      await cells.nth(i).click();
      picked++;
    }
  assert.ok(picked >= 5, `${picked} ankle boots offered`);
  assert.equal(await page.evaluate(() => window.demo.picked.length), picked);
  await page.fill('#steps', '80');
  await page.click('#train');
  await page.waitForFunction(() => window.demo.done || window.demo.error, null, { timeout: 240_000 });
  const res = await page.evaluate(() => ({ ...window.demo }));
  assert.equal(res.error, null);
  assert.equal(res.losses.length, 80);
  assert.ok(res.workerMs > 0, 'fine-tuned in the Web Worker');
  const mean = (a) => a.reduce((s, v) => s + v, 0) / a.length;
  const first = mean(res.losses.slice(0, 10)), last = mean(res.losses.slice(-10));
  assert.ok(last < 0.7 * first, `the loss falls: first ten steps ${first}, last ten ${last}`);
  assert.ok(res.after.newRecall > 0.6, `held-out ankle boots recognised: ${res.after.newRecall}`);
  assert.ok(res.after.oldAcc > 0.6, `the known classes are kept: ${res.after.oldAcc} (before ${res.before.oldAcc})`);
  assert.ok(await page.locator('#after .cell.ok').count() >= 12);
  assert.ok(res.savedBytes > 100_000);
  assert.deepEqual(errors, []);
  fs.mkdirSync(path.dirname(shot), { recursive: true });
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`# demo: ready in ${res.startMs.toFixed(0)} ms; fine-tuning ${res.examplesPerSecond.toFixed(0)} examples/s; ` +
    `loss ${first.toFixed(4)} -> ${last.toFixed(4)}; ankle boots ${(100 * res.after.newRecall).toFixed(1)}%, ` +
    `known classes ${(100 * res.before.oldAcc).toFixed(1)}% -> ${(100 * res.after.oldAcc).toFixed(1)}%; screenshot ${shot}`);
});

test('the package in a Web Worker (module worker): its own instance predicts as the page does', async () => {
  const page = await browser.newPage();
  await page.goto(url);
  await page.waitForFunction(() => window.demo?.ready || window.demo?.error, null, { timeout: 60_000 });
  const res = await page.evaluate(async () => {
    const lithe = await import('lithe-wasm');
    const model = await lithe.load('/model/fashion9.lithe');
    const x = new Float32Array(784 * 2).map((_, i) => (i % 7) / 7);
    const mine = Array.from(model.predict(x, [2, 784]).data);
    const src = `import * as lithe from '${location.origin}/lithe/src/index.js';
      const info = await lithe.init();
      const model = await lithe.load('${location.origin}/model/fashion9.lithe');
      const y = model.predict(new Float32Array(784 * 2).map((_, i) => (i % 7) / 7), [2, 784]);
      postMessage({ simd: info.simd, shape: y.shape, data: Array.from(y.data), inWorker: typeof document === 'undefined' });`;
    const worker = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
    const msg = await new Promise((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => reject(new Error(e.message));
    });
    worker.terminate();
    return { mine, ...msg };
  });
  assert.equal(res.inWorker, true);
  assert.equal(res.simd, true);
  assert.deepEqual(res.shape, [2, 9]);
  assert.deepEqual(res.data, res.mine);
  await page.close();
});

// Picks the ankle boots the gallery offers (by the dataset's labels), fine-tunes for `steps` steps
// and returns window.demo afterwards.
async function fineTune(page, steps) {
  const cells = page.locator('#gallery .cell');
  const indices = await cells.evaluateAll((els) => els.map((e) => Number(e.dataset.index)));
  for (let i = 0; i < indices.length; i++) if (labels[indices[i]] === 9) await cells.nth(i).click();
  await page.fill('#steps', String(steps));
  await page.click('#train');
  await page.waitForFunction(() => window.demo.done || window.demo.error, null, { timeout: 240_000 });
  return page.evaluate(() => ({ ...window.demo }));
}

// The same 64 images through the page's own instance.
const predict64 = (page) => page.evaluate(async () => {
  const lithe = await import('lithe-wasm');
  const model = await lithe.load('/model/fashion9.lithe');
  const x = new Float32Array(784 * 64).map((_, i) => ((i * 7919) % 255) / 255);
  return Array.from(new Uint32Array(model.predict(x, [64, 784]).data.buffer));
});

test('threads: a cross-origin isolated page (COOP + COEP) picks the threads build, in the page and in its worker; the same bits as one thread', async () => {
  const errors = [];
  const open = async (base, more = '') => {
    const page = await browser.newPage({ viewport: { width: 1000, height: 1800 } });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(`${base}?threads=2${more}`);
    await page.waitForFunction(() => window.demo?.ready || window.demo?.error, null, { timeout: 60_000 });
    return page;
  };
  const iso = await open(isoUrl);
  const info = await iso.evaluate(() => ({ error: window.demo.error, isolated: window.demo.isolated, build: window.demo.build, threads: window.demo.threads }));
  assert.deepEqual(info, { error: null, isolated: true, build: 'simd-threads', threads: 2 });
  // without the headers the same URL falls back, silently, to one thread: the relaxed-SIMD build
  // (Chromium has relaxed SIMD), or with ?relaxed=0 the SIMD128 build, whose bits the threads build's are
  const relaxedPage = await open(url);
  const infoR = await relaxedPage.evaluate(() => ({ error: window.demo.error, isolated: window.demo.isolated, build: window.demo.build, threads: window.demo.threads }));
  assert.deepEqual(infoR, { error: null, isolated: false, build: 'relaxed-simd', threads: 1 });
  await relaxedPage.close();
  const plain = await open(url, '&relaxed=0');
  const info1 = await plain.evaluate(() => ({ error: window.demo.error, isolated: window.demo.isolated, build: window.demo.build, threads: window.demo.threads }));
  assert.deepEqual(info1, { error: null, isolated: false, build: 'simd', threads: 1 });
  assert.deepEqual(await predict64(iso), await predict64(plain), 'predictions on 2 threads: the bits of 1 thread');

  // fine-tuning in the page's Web Worker, which starts its own threads (nested workers)
  const a = await fineTune(iso, 10), b = await fineTune(plain, 10);
  assert.equal(a.error, null);
  assert.equal(a.workerBuild, 'simd-threads');
  assert.equal(a.workerThreads, 2);
  assert.equal(b.workerBuild, 'simd');
  assert.equal(a.losses.length, 10);
  assert.deepEqual(a.picked, b.picked);
  assert.deepEqual(a.losses, b.losses, 'the same ten losses on 2 threads as on 1');
  assert.deepEqual(errors, []);
  console.log(`# threads in Chromium: fine-tuning ${a.examplesPerSecond.toFixed(0)} examples/s on 2 threads, ${b.examplesPerSecond.toFixed(0)} on 1`);
  await iso.close();
  await plain.close();
});

test('ONNX / TF.js in the browser: the importer module is fetched and linked when a model first needs it', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => window.demo?.ready || window.demo?.error, null, { timeout: 60_000 });
  const res = await page.evaluate(async () => {
    const lithe = await import('lithe-wasm');
    const linkedAtStart = !!lithe.c().importers; // the page has loaded its .lithe MLP
    // a TF.js 1x1 Conv2D with an identity kernel, then Flatten: predicts its input
    const tfjs = { modelTopology: { class_name: 'Sequential', config: { name: 's', layers: [
      { class_name: 'Conv2D', config: { name: 'c', filters: 3, kernel_size: [1, 1], use_bias: false, batch_input_shape: [null, 2, 2, 3] } },
      { class_name: 'Flatten', config: { name: 'f' } }] } },
    weightSpecs: [{ name: 'c/kernel', shape: [1, 1, 3, 3], dtype: 'float32' }],
    weightData: new Float32Array([1, 0, 0, 0, 1, 0, 0, 0, 1]).buffer };
    const x = Array.from({ length: 12 }, (_, i) => i);
    const model = await lithe.load(tfjs);
    const y = Array.from(model.predict(Float32Array.from(x), [1, 2, 2, 3]).data);
    const bytes = model.save(); // a .lithe file holding the graph
    const again = Array.from(lithe.loadBytes(bytes).predict(Float32Array.from(x), [1, 2, 2, 3]).data);
    // a fresh instance in a worker: the synchronous loadBytes cannot fetch the module and says so;
    // load() fetches it
    const src = `import * as lithe from '${location.origin}/lithe/src/index.js';
      onmessage = async (e) => {
        await lithe.init();
        let syncError = null;
        try { lithe.loadBytes(e.data); } catch (err) { syncError = err.message; }
        const m = await lithe.load(e.data);
        postMessage({ syncError, workerY: Array.from(m.predict(new Float32Array(12).map((_, i) => i), [1, 2, 2, 3]).data) });
      };`;
    const worker = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
    const msg = await new Promise((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => reject(new Error(e.message));
      worker.postMessage(bytes);
    });
    worker.terminate();
    return { linkedAtStart, linked: !!lithe.c().importers, x, y, again, ...msg };
  });
  assert.equal(res.linkedAtStart, false, 'the .lithe MLP page linked the importer module');
  assert.equal(res.linked, true);
  assert.deepEqual(res.y, res.x);
  assert.deepEqual(res.again, res.x);
  assert.match(res.syncError, /lithe-importers\.wasm, which is not loaded/);
  assert.deepEqual(res.workerY, res.x);
  assert.deepEqual(errors, []);
  await page.close();
});
