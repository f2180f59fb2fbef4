// The demo's "train on the GPU" mode end to end in Debian's Chromium on its SwiftShader WebGPU
// adapter (--enable-unsafe-webgpu --use-webgpu-adapter=swiftshader; SwiftShader is Vulkan on the
// CPU, so the times are not GPU speed): the page (?gpu=1 ticks the switch) fine-tunes in its Web
// Worker through the WebGPU module (init({ device: 'webgpu' }), model.to('webgpu'),
// trainStepAsync), shows dispatches, submits and the step time, and the fine-tuned weights come
// back to the page. Without an adapter the page falls back to the CPU and says why: this test then
// fails under LITHE_REQUIRE_WEBGPU (test.sh) and skips otherwise. LITHE_NATIVE names the native
// lithe command that trains the model.
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
const required = !!process.env.LITHE_REQUIRE_WEBGPU && process.env.LITHE_REQUIRE_WEBGPU !== '0';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-demo-gpu-'));
const labels = zlib.gunzipSync(fs.readFileSync('/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz')).subarray(8);
let server, browser, url;

before(async () => {
  const native = path.resolve(repo, process.env.LITHE_NATIVE ?? 'build/ci/tools/lithe/lithe');
  const model = path.join(work, 'fashion9.lithe');
  const r = spawnSync(native, ['train-mnist', '--classes', '9', '--epochs', '1', '--limit', '12000', '--save', model], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  server = spawn(process.execPath, [path.join(webDir, 'serve.mjs'), '--port', '0', '--model', model], { stdio: ['ignore', 'pipe', 'inherit'] });
  url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) resolve(m[1]);
    });
    server.once('exit', (code) => reject(new Error(`serve.mjs exited with ${code}: ${out}`)));
  });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update',
      '--disable-dev-shm-usage', '--disable-sync', '--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader', '--enable-features=Vulkan'],
  });
});

after(async () => {
  await browser?.close();
  server?.kill();
  fs.rmSync(work, { recursive: true, force: true });
});

test('the demo trains on the GPU (WebGPU): dispatches and step time shown, one submit plus the loss read-back per step', async (t) => {
  const page = await browser.newPage({ viewport: { width: 1000, height: 1800 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.goto(`${url}?gpu=1`);
  await page.waitForFunction(() => window.demo?.ready || window.demo?.error, null, { timeout: 60_000 });
  assert.equal(await page.isChecked('#gpu'), true, '?gpu=1 ticks the switch');
  const cells = page.locator('#gallery .cell');
  const indices = await cells.evaluateAll((els) => els.map((e) => Number(e.dataset.index)));
  for (let i = 0; i < indices.length; i++) if (labels[indices[i]] === 9) await cells.nth(i).click();
  const steps = 12;
  await page.fill('#steps', String(steps));
  await page.click('#train');
  await page.waitForFunction(() => window.demo.done || window.demo.error, null, { timeout: 480_000, polling: 1000 });
  const res = await page.evaluate(() => ({ ...window.demo }));
  if (res.device !== 'webgpu' && !required) {
    t.skip(`no WebGPU adapter in Chromium: ${res.deviceReason}`);
    return;
  }
  assert.equal(res.error, null);
  assert.equal(res.device, 'webgpu', `the worker trained on the GPU (reason otherwise: ${res.deviceReason})`);
  assert.equal(res.losses.length, steps);
  assert.ok(res.losses.every(Number.isFinite), `finite losses: ${res.losses}`);
  const mean = (a) => a.reduce((s, v) => s + v, 0) / a.length;
  assert.ok(mean(res.losses.slice(-4)) < mean(res.losses.slice(0, 4)), `the loss falls: ${res.losses.map((v) => v.toFixed(3))}`);
  assert.ok(res.gpu.dispatches > 0);
  assert.equal(res.gpu.readbacks, 1, 'one read-back per step: the loss');
  assert.ok(res.gpu.submits <= 2, `one submit per step plus the loss read-back's, got ${res.gpu.submits}`);
  assert.match(await page.textContent('#gpu-text'), /dispatches, \d+ submits, 1 read-back per step; [\d.]+ ms\/step/);
  assert.ok(res.after && res.after.oldAcc > 0.5, `the fine-tuned weights came back: known classes ${res.after?.oldAcc}`);
  assert.deepEqual(errors, []);
  console.log(`# demo on the GPU (Chromium, SwiftShader): ${res.gpu.dispatches} dispatches, ${res.gpu.submits} submits, ` +
    `${res.gpu.readbacks} read-back per step; ${res.gpu.ms.toFixed(0)} ms/step; loss ${res.losses[0].toFixed(3)} -> ${res.losses.at(-1).toFixed(3)}`);
  await page.close();
});
