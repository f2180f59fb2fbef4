// The WebGPU conformance in Debian's Chromium (playwright-core), on its SwiftShader adapter
// (--enable-unsafe-webgpu --use-webgpu-adapter=swiftshader): browser/page.mjs, served here on
// http://127.0.0.1 (a secure context; about:blank has no navigator.gpu), runs the conformance
// module's checks against the CPU (every primitive, the loss read back once, the GEMM with and
// without subgroups, a Relu MLP's ten Adam steps), the step counts and the npm API end to end.
// Without an adapter the tests skip saying why, unless LITHE_REQUIRE_WEBGPU is set (not to 0), as
// test.sh does: then they fail.
//   LITHE_WEBGPU_TEST_WASM: the module (default build/wasm-webgpu/bindings/js/lithe-webgpu-test.wasm)
//   CHROMIUM: the browser (default /usr/bin/chromium)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const required = !!process.env.LITHE_REQUIRE_WEBGPU && process.env.LITHE_REQUIRE_WEBGPU !== '0';
const wasmPath = process.env.LITHE_WEBGPU_TEST_WASM ?? path.join(root, 'build/wasm-webgpu/bindings/js/lithe-webgpu-test.wasm');
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm' };

// /lithe/... -> bindings/js, /wasm/lithe-webgpu-test.wasm -> the module, / -> browser/
function resolve(url) {
  const p = decodeURIComponent(url.split('?')[0]);
  const within = (base, rel) => {
    const f = path.resolve(base, `.${path.posix.normalize(`/${rel}`)}`);
    return f.startsWith(base + path.sep) ? f : null;
  };
  if (p === '/wasm/lithe-webgpu-test.wasm') return wasmPath;
  if (p.startsWith('/lithe/')) return within(path.join(root, 'bindings/js'), p.slice(7));
  return within(path.join(here, 'browser'), p === '/' ? 'index.html' : p.slice(1));
}

let server, browser, result;
before(async () => {
  server = http.createServer((req, res) => {
    const f = resolve(req.url);
    if (!f || !fs.existsSync(f) || !fs.statSync(f).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(f)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
    fs.createReadStream(f).pipe(res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--no-first-run', '--disable-dev-shm-usage', '--disable-background-networking',
      '--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader', '--enable-features=Vulkan'],
  });
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForFunction(() => window.result, null, { timeout: 540_000, polling: 500 });
  result = await page.evaluate(() => window.result);
  if (errors.length) result.pageErrors = errors;
});

after(async () => {
  await browser?.close();
  server?.close();
});

// (decided once the page has run: before() comes after the tests are declared)
const skipped = (t) => {
  if (result?.adapter || required) return false;
  t.skip(`no WebGPU adapter in Chromium: ${result?.reason}`);
  return true;
};

test('Chromium: a WebGPU adapter is found (LITHE_REQUIRE_WEBGPU)', () => {
  assert.equal(result.crashed, undefined, result.crashed);
  if (!result.adapter && !required) return; // reported by the skips below
  assert.ok(result.adapter, `LITHE_REQUIRE_WEBGPU is set and Chromium found no adapter: ${result.reason}`);
  console.log(`Chromium adapter: ${result.info.vendor} / ${result.info.architecture}, subgroup sizes ${result.info.subgroupMinSize}..${result.info.subgroupMaxSize}`);
});

for (const name of ['wgt_primitives', 'wgt_once', 'wgt_gemm_variants', 'wgt_mlp'])
  test(`Chromium: ${name} matches the CPU backend`, (t) => {
    if (skipped(t)) return;
    const c = result.checks[name];
    assert.ok(c, `${name} did not run`);
    assert.equal(c.fails, 0, c.out);
    assert.deepEqual(c.errors, [], 'WebGPU validation errors');
    if (name === 'wgt_gemm_variants') assert.match(c.out, /gemm variant: subgroups/, 'Chromium\'s SwiftShader adapter has subgroups: the subgroup GEMM is checked');
    console.log(`${name}: ${c.ms.toFixed(0)} ms${name === 'wgt_gemm_variants' ? `; ${(c.out.match(/gemm variant: [^\n]*?\)/g) ?? []).join(', ')}` : ''}`);
  });

test('Chromium: one MLP training step, counts', (t) => {
  if (skipped(t)) return;
  const { status, per, ms, out } = result.step;
  assert.equal(status, 0, out);
  console.log(`Chromium C-level step (784-64-32-10, batch 32): ${per.dispatches} dispatches, ${per.clears} clears, ${per.submits} submits, ` +
              `${per.readbacks} read-backs; ${ms.toFixed(1)} ms/step`);
  assert.equal(per.pipelines, 0);
  assert.equal(per.buffers, 0);
  assert.ok(per.submits <= per.readbacks + 1);
});

test("Chromium: npm API, init({ device: 'webgpu' }), predictAsync / trainStepAsync vs the CPU", (t) => {
  if (skipped(t)) return;
  const n = result.npm;
  assert.ok(n, 'the npm part did not run');
  assert.equal(n.device, 'webgpu');
  assert.ok(n.maxPred < 1e-5, `predictions differ by ${n.maxPred}`);
  assert.ok(n.maxLoss < 1e-4, `losses differ by ${n.maxLoss}`);
  assert.ok(n.maxPred1 < 1e-4, `predictions after 10 steps differ by ${n.maxPred1}`);
  assert.equal(n.syncRefused, true);
  assert.equal(n.per.readbacks, 1, 'one read-back per step');
  assert.ok(n.per.submits <= 2, `at most one submit per step plus the loss read-back, got ${n.per.submits}`);
  console.log(`Chromium npm trainStepAsync: ${n.per.dispatches} dispatches, ${n.per.submits} submits, ${n.per.readbacks} read-backs per step`);
});
