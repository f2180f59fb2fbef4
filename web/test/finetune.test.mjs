// The fine-tuning demo (finetune.html, issue 26): its base CNN trained by lithe (make-cnn.mjs, the
// npm package in Node); the accuracy bar — LoRA rank 8 and last-layer fine-tuning within 2 points
// of full fine-tuning on held-out images — measured with the page's own recipe
// (finetune-accuracy.mjs); and the page end to end in Debian's Chromium (playwright-core): a few
// steps in each mode, the memory figures, and the downloaded adapters loaded back onto the base in
// Node, where they predict as the downloaded merged model does. Screenshot: LITHE_FINETUNE_SCREENSHOT
// (default build/web/finetune.png). LITHE_FINETUNE_BASE: a base make-cnn.mjs made already (else
// the test makes one).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import * as lithe from '../../bindings/js/src/index.js';
import { batchOf, idxPayload, split } from '../finetune-core.js';

const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repo = path.resolve(webDir, '..');
const shot = path.resolve(repo, process.env.LITHE_FINETUNE_SCREENSHOT ?? 'build/web/finetune.png');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-finetune-'));
const base = process.env.LITHE_FINETUNE_BASE ? path.resolve(process.env.LITHE_FINETUNE_BASE) : path.join(work, 'fashion-cnn8.lithe');
let server, browser, url;

before(async () => {
  // the base, as serve.mjs makes it (1500 steps of 64 on the eight classes: ~30 s of one core)
  if (!process.env.LITHE_FINETUNE_BASE) {
    const r = spawnSync(process.execPath, [path.join(webDir, 'make-cnn.mjs'), '--out', base], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    console.log(`# ${r.stdout.trim().split('\n').pop()}`);
  }
  const proc = spawn(process.execPath, [path.join(webDir, 'serve.mjs'), '--port', '0', '--model', base, '--cnn', base], { stdio: ['ignore', 'pipe', 'inherit'] });
  [server, url] = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) resolve([proc, m[1]]);
    });
    proc.once('exit', (code) => reject(new Error(`serve.mjs exited with ${code}: ${out}`)));
  });
  await lithe.init({ threads: 1 });
});

after(async () => {
  await browser?.close();
  server?.kill();
  fs.rmSync(work, { recursive: true, force: true });
});

test('accuracy: LoRA rank 8 and last-layer fine-tuning within 2 points of full fine-tuning (the page\'s recipe, in Node)', () => {
  const json = path.join(work, 'accuracy.json');
  const r = spawnSync(process.execPath, [path.join(webDir, 'finetune-accuracy.mjs'), '--model', base, '--json', json], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  for (const line of r.stdout.trim().split('\n')) console.log(`# ${line}`);
  const { results } = JSON.parse(fs.readFileSync(json, 'utf8'));
  assert.ok(results.full.acc > 0.8, `full fine-tuning: ${results.full.acc}`);
  assert.ok(results.full.newAcc > 0.85, `full fine-tuning on the two new classes: ${results.full.newAcc}`);
  for (const m of ['last', 'lora']) assert.ok(results.full.acc - results[m].acc <= 0.02, `${m}: ${results[m].acc} against full ${results.full.acc}`);
  // what a step needs: freezing and adapters keep less
  assert.ok(results.last.plan < results.lora.plan && results.lora.plan < results.full.plan, JSON.stringify(results));
  assert.ok(results.lora.peak < results.full.peak);
});

test('the page: fine-tunes in each mode in a Web Worker, shows the memory of a step, and its adapters load back', async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update',
      '--disable-dev-shm-usage', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1000, height: 1100 }, acceptDownloads: true });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.goto(`${url}finetune.html`);
  await page.waitForFunction(() => window.fine?.ready || window.fine?.error, null, { timeout: 60_000 });
  const ready = await page.evaluate(() => ({ error: window.fine.error, base: window.fine.base }));
  assert.equal(ready.error, null);
  assert.ok(ready.base.acc > 0.8, `the base on its eight classes: ${ready.base.acc}`);

  const steps = 8;
  for (const mode of ['full', 'last', 'lora']) {
    await page.check(`input[name="mode"][value="${mode}"]`);
    await page.fill('#steps', String(steps));
    await page.click('#train');
    await page.waitForFunction((m) => window.fine.runs[m]?.done || window.fine.error, mode, { timeout: 120_000 });
  }
  const runs = await page.evaluate(() => ({ error: window.fine.error, runs: window.fine.runs }));
  assert.equal(runs.error, null);
  for (const [mode, r] of Object.entries(runs.runs)) {
    assert.equal(r.losses.length, steps, mode);
    assert.ok(r.losses.every(Number.isFinite), mode);
    const { plan, measured } = r.memory;
    assert.ok(plan.total > 0 && plan.total === plan.params + plan.grads + plan.optState + plan.activations + plan.workspace, mode);
    assert.ok(measured.peak > 0 && measured.wasm >= measured.peak, `${mode}: ${JSON.stringify(measured)}`);
    assert.ok(r.result.acc > 0.3, `${mode} after ${steps} steps: ${r.result.acc}`);
  }
  const { full, last, lora } = runs.runs;
  assert.ok(last.memory.plan.grads < full.memory.plan.grads / 10, 'the frozen base has no gradients');
  assert.ok(lora.memory.plan.total < full.memory.plan.total, 'LoRA: a step on a frozen base needs less');
  assert.ok(lora.adapters > 0 && full.adapters === 0);
  assert.equal(await page.locator('#memory tbody tr').count(), 3);
  assert.match(await page.locator('#memory tbody').innerText(), /MiB/);
  assert.equal(await page.locator('#results tbody tr').count(), 3);

  // the downloads: the adapters alone, and the model with them merged (the last run was LoRA)
  const download = async (button) => {
    const [d] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
    return new Uint8Array(fs.readFileSync(await d.path()));
  };
  const adapters = await download('#download-adapters');
  const merged = await download('#download-model');
  assert.equal(adapters.length, lora.adapters);
  assert.equal(merged.length, lora.merged);
  assert.ok(adapters.length < merged.length / 5, `adapters ${adapters.length} B, model ${merged.length} B`);
  // in Node: the base, two more outputs, the adapters — predicts as the merged model
  const images = idxPayload(zlib.gunzipSync(fs.readFileSync('/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz')));
  const x = batchOf(lithe, images, split().heldout.slice(0, 64));
  const model = await lithe.load(new Uint8Array(fs.readFileSync(base)));
  model.resizeOutput(10);
  model.loadLora(adapters);
  assert.equal(model.loraCount, 2);
  const a = model.predict(x), b = (await lithe.load(merged)).predict(x);
  assert.deepEqual(a.shape, [64, 10]);
  const worst = a.data.reduce((m, v, i) => Math.max(m, Math.abs(v - b.data[i])), 0);
  assert.ok(worst < 1e-5, `adapters on the base against the merged model: max diff ${worst}`);
  assert.deepEqual(Array.from(a.argmax()), Array.from(b.argmax()));
  assert.deepEqual(errors, []);
  fs.mkdirSync(path.dirname(shot), { recursive: true });
  await page.screenshot({ path: shot, fullPage: true });
  const f = (m) => `${m} plan ${(runs.runs[m].memory.plan.total / 1048576).toFixed(2)} MiB, peak ${(runs.runs[m].memory.measured.peak / 1048576).toFixed(2)} MiB`;
  console.log(`# finetune.html in Chromium: ${['full', 'last', 'lora'].map(f).join('; ')}; adapters ${adapters.length} B, merged ${merged.length} B; screenshot ${shot}`);
});
