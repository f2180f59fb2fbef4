// What a new user gets: `npm pack`, installed into an empty project, imported by name, predicting
// natively's numbers — and the same package inside a worker thread (the Web Worker situation:
// no DOM, module code, its own instance) and checked by TypeScript against its declarations.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { nativeFixture, pkgDir, maxAbsDiff } from './fixtures.mjs';

// A TF.js model as source text: a 1x1 Conv2D with an identity kernel, then Flatten (predicts its
// input); it needs the importer module.
const TFJS = `{ modelTopology: { class_name: 'Sequential', config: { name: 's', layers: [
  { class_name: 'Conv2D', config: { name: 'c', filters: 3, kernel_size: [1, 1], use_bias: false, batch_input_shape: [null, 2, 2, 3] } },
  { class_name: 'Flatten', config: { name: 'f' } }] } },
  weightSpecs: [{ name: 'c/kernel', shape: [1, 1, 3, 3], dtype: 'float32' }],
  weightData: new Float32Array([1, 0, 0, 0, 1, 0, 0, 0, 1]).buffer }`;

let fx, proj;
before(() => {
  fx = nativeFixture();
  proj = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-pack-'));
});
after(() => {
  fx?.cleanup();
  if (proj) fs.rmSync(proj, { recursive: true, force: true });
});

test('npm pack yields a package that installs and works by name', () => {
  const packed = spawnSync('npm', ['pack', '--json', '--pack-destination', proj], { cwd: pkgDir, encoding: 'utf8' });
  assert.equal(packed.status, 0, packed.stderr);
  const [info] = JSON.parse(packed.stdout);
  const files = info.files.map((f) => f.path).sort();
  for (const f of ['README.md', 'dist/lithe-importers.wasm', 'dist/lithe-importers-simd.wasm', 'dist/lithe-scalar.wasm', 'dist/lithe-simd.wasm', 'dist/lithe-simd-threads.wasm', 'package.json',
    'src/index.d.ts', 'src/index.js', 'src/loader.js', 'src/raw.js', 'src/thread.js'])
    assert.ok(files.includes(f), `${f} is in the package (${files})`);
  assert.ok(!files.some((f) => f.startsWith('test/') || f.endsWith('.c')), 'no tests or C sources in the package');
  // issue 6's bound on the download: the SIMD core module under 400 KB (docs/wasm.md, "Figures")
  const simdBytes = info.files.find((f) => f.path === 'dist/lithe-simd.wasm').size;
  assert.ok(simdBytes < 400000, `dist/lithe-simd.wasm is ${simdBytes} bytes, over issue 6's 400 KB`);
  fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: 'user-project', private: true, type: 'module' }));
  const inst = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--offline', path.join(proj, info.filename)], { cwd: proj, encoding: 'utf8' });
  assert.equal(inst.status, 0, inst.stderr);
  fs.copyFileSync(path.join(fx.work, 'model.lithe'), path.join(proj, 'model.lithe'));
  fs.copyFileSync(path.join(fx.work, 'x.npy'), path.join(proj, 'x.npy'));
  // the README's example, give or take the input
  fs.writeFileSync(path.join(proj, 'main.mjs'), `
import fs from 'node:fs';
import * as lithe from 'lithe';
const info = await lithe.init({ threads: Number(process.argv[2] ?? 1) });
const model = await lithe.load('model.lithe');
const npy = fs.readFileSync('x.npy');
const x = new Float32Array(npy.buffer.slice(npy.byteOffset + 128, npy.byteOffset + npy.length));
const y = model.predict(x, [64, 784]);
// a TF.js model: the importer module comes from the installed package too (the threads module
// has it built in)
const tfjs = await lithe.load(${TFJS});
const t = tfjs.predict(new Float32Array(12).map((_, i) => i), [1, 2, 2, 3]);
process.stdout.write(JSON.stringify({ build: info.build, threads: info.threads, shape: y.shape, data: Array.from(y.data),
  tfjs: Array.from(t.data) }));
model.dispose();
`);
  // one thread (the SIMD module), then two (the threads module and its worker script, as installed)
  for (const [threads, build] of [[1, 'simd'], [2, 'simd-threads']]) {
    const r = spawnSync(process.execPath, ['main.mjs', String(threads)], { cwd: proj, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.build, build);
    assert.equal(out.threads, threads);
    assert.deepEqual(out.shape, [64, 10]);
    assert.ok(maxAbsDiff(out.data, fx.golden.data) <= 1e-6);
    assert.deepEqual(out.tfjs, Array.from({ length: 12 }, (_, i) => i));
  }
});

test('in a worker thread: its own instance, predictions as native', async () => {
  const worker = new Worker(new URL('./worker.mjs', import.meta.url), { workerData: { model: fx.modelBytes, x: fx.x } });
  const result = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.deepEqual(result.shape, [64, 10]);
  assert.ok(maxAbsDiff(result.data, fx.golden.data) <= 1e-6);
});

test('the TypeScript declarations check against a typical program', (t) => {
  const tsc = path.join(pkgDir, 'node_modules/typescript/bin/tsc');
  if (!fs.existsSync(tsc)) return t.skip('typescript is not installed (npm ci)');
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext',
    '--moduleResolution', 'nodenext', '--types', 'node', path.join(pkgDir, 'test/types.ts')], { cwd: pkgDir, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('a bundler (esbuild, for browsers) bundles the package, and the bundle runs', async (t) => {
  const esbuild = path.join(pkgDir, 'node_modules/esbuild/lib/main.js');
  if (!fs.existsSync(esbuild)) return t.skip('esbuild is not installed (npm ci)');
  const { build } = await import(esbuild);
  const app = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-bundle-'));
  try {
    fs.writeFileSync(path.join(app, 'main.js'), `
import * as lithe from ${JSON.stringify(path.join(pkgDir, 'src/index.js'))};
const info = await lithe.init();
const model = lithe.loadBytes(globalThis.MODEL);
const tfjs = await lithe.load(${TFJS}); // the importer module, found beside the bundle too
globalThis.RESULT = { simd: info.simd, y: Array.from(model.predict(new Float32Array(784), [1, 784]).data),
  tfjs: Array.from(tfjs.predict(new Float32Array(12).map((_, i) => i), [1, 2, 2, 3]).data) };
`);
    // no errors: Node's modules, used only in Node, must not trip a browser build
    const res = await build({ entryPoints: [path.join(app, 'main.js')], bundle: true, format: 'esm', platform: 'browser',
      outfile: path.join(app, 'out/bundle.js'), logLevel: 'silent' });
    assert.deepEqual(res.errors, []);
    // the bundle finds the .wasm at ../dist/ beside it, as the package's layout has it
    fs.cpSync(path.join(pkgDir, 'dist'), path.join(app, 'dist'), { recursive: true });
    globalThis.MODEL = fx.modelBytes;
    await import(path.join(app, 'out/bundle.js'));
    assert.equal(globalThis.RESULT.y.length, 10);
    assert.equal(globalThis.RESULT.simd, true);
    assert.deepEqual(globalThis.RESULT.tfjs, Array.from({ length: 12 }, (_, i) => i));
  } finally {
    fs.rmSync(app, { recursive: true, force: true });
  }
});
