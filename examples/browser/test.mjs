// What a bundler user gets, end to end: `npm pack` of bindings/js, installed into an empty app
// (a temporary copy of this folder), built by Vite, webpack 5 and esbuild with the configs here
// (no copying by hand), and each bundle run in Debian's Chromium (playwright-core): it must predict
// the native lithe's numbers for the same model and images, and run a TF.js model (the importer
// .wasm, a second asset). LITHE_NATIVE names the native lithe command (default build/ci).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { nativeFixture, maxAbsDiff } from '../../bindings/js/test/fixtures.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(here, '../../bindings/js');
const mods = path.join(here, 'node_modules');
let fx, app, server, origin, browser;

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };
function serve(routes) {
  const srv = http.createServer((req, res) => {
    const p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (p === '/favicon.ico') return void res.writeHead(204).end(); // (what Chromium asks for first)
    let file = p.endsWith('/') ? undefined : routes[p];
    for (const [prefix, dir] of Object.entries(routes))
      if (!file && prefix.endsWith('/') && p.startsWith(prefix)) {
        const f = path.resolve(dir, `.${path.posix.normalize(`/${p.slice(prefix.length) || 'index.html'}`)}`);
        if (f.startsWith(dir)) file = f;
      }
    if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

before(async () => {
  fx = nativeFixture();
  app = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-bundlers-'));
  for (const f of ['main.js', 'index.html', 'vite.config.mjs', 'webpack.config.mjs', 'esbuild.config.mjs'])
    fs.copyFileSync(path.join(here, f), path.join(app, f));
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', app], pkgDir));
  run('npm', ['install', '--no-audit', '--no-fund', '--offline', '--no-save', path.join(app, info.filename)], app);
  // the bundlers come from this folder's node_modules (npm ci here)
  fs.symlinkSync(path.join(mods, 'esbuild'), path.join(app, 'node_modules/esbuild'));
  fs.writeFileSync(path.join(app, 'x.bin'), fx.x.subarray(0, 4 * 784));
  server = await serve({ '/model.lithe': path.join(fx.work, 'model.lithe'), '/x.bin': path.join(app, 'x.bin'),
    '/vite/': path.join(app, 'out-vite'), '/webpack/': path.join(app, 'out-webpack'), '/esbuild/': path.join(app, 'out-esbuild') });
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
  if (app) fs.rmSync(app, { recursive: true, force: true });
});

const BUILDS = {
  vite: () => run(process.execPath, [path.join(mods, 'vite/bin/vite.js'), 'build', '--logLevel', 'warn'], app),
  webpack: () => {
    run(process.execPath, [path.join(mods, 'webpack-cli/bin/cli.js'), '--config', 'webpack.config.mjs'], app);
    fs.writeFileSync(path.join(app, 'out-webpack/index.html'), '<p id="out"></p><script src="bundle.js"></script>');
  },
  esbuild: () => {
    run(process.execPath, ['esbuild.config.mjs'], app);
    fs.writeFileSync(path.join(app, 'out-esbuild/index.html'), '<p id="out"></p><script type="module" src="main.js"></script>');
  },
};

for (const [name, build] of Object.entries(BUILDS)) {
  test(`${name}: the bundle predicts in Chromium as native lithe does`, async () => {
    build();
    const out = path.join(app, `out-${name}`);
    const files = fs.readdirSync(out, { recursive: true }).map(String);
    assert.ok(files.some((f) => /lithe-simd.*\.wasm$/.test(f)), `${name} emitted the SIMD module: ${files}`);
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(`${origin}/${name}/`);
    await page.waitForFunction(() => window.RESULT, null, { timeout: 60_000 });
    const res = await page.evaluate(() => window.RESULT);
    await page.close();
    assert.equal(res.error, undefined, res.error);
    assert.equal(res.build, 'relaxed-simd'); // Chromium has relaxed SIMD: the loader picks that core (relaxed.test.mjs)
    assert.equal(res.y.length, 4 * 10);
    assert.ok(maxAbsDiff(res.y, fx.golden.data.subarray(0, 40)) <= 1e-6, `${name}: predictions as native`);
    assert.deepEqual(res.tfjs, [4, 5]);
    assert.deepEqual(errors, []);
  });
}
