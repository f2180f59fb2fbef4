// The threads module (lithe-simd-threads.wasm, two threads: the main one and a worker_threads
// worker on the same shared memory): the whole package suite, then what threads add: results bit
// for bit those of one thread and of the plain SIMD module (the pool splits work by output, never
// inside a sum), and the workers did compute.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { suite } from './suite.mjs';
import { maxAbsDiff, fashion, npyRead, pkgDir } from './fixtures.mjs';

let fx;
const shared = suite({ threads: 2 });
before(() => {
  fx = shared.fixture();
});

// The CPU backend's thread count, through the C-mirror layer.
function setThreads(n) {
  const r = lithe.c();
  const name = r.allocString('cpu');
  try {
    r.check(r.lithe_backend_get(name, r.outPtr(0)));
  } finally {
    r.free(name);
  }
  const cpu = r.readU32(r.outPtr(0));
  const st = r.lithe_backend_set_threads(cpu, n);
  return { st, threads: r.lithe_backend_threads(cpu) };
}
const workerRanges = () => lithe.c().lithe_js_thread_ranges();
const bits = (f32) => new Uint32Array(f32.buffer, f32.byteOffset, f32.length);

// B images through the model, on `threads` threads; checks the workers ran ranges when threads > 1.
// The caller takes over the chunks a late worker has not claimed (a worker is slow to wake on a busy
// machine), so when the worker computed nothing the prediction runs again, the same bits each time,
// until it has: for up to 5 s, not a count of tries (20 batch-1 predictions took less time than a
// worker's wake-up on a loaded CI host and the check failed once).
function predictOn(threads, model, x, B) {
  assert.equal(setThreads(threads).st, 0);
  const before = workerRanges();
  const y = model.predict(x.slice(0, B * 784), [B, 784]).data;
  const until = Date.now() + 5000;
  for (let r = 0; threads > 1 && (r < 20 || Date.now() < until) && workerRanges() === before; r++)
    assert.deepEqual(bits(model.predict(x.slice(0, B * 784), [B, 784]).data), bits(y));
  if (threads > 1) assert.ok(workerRanges() > before, 'the worker thread computed part of the prediction');
  else assert.equal(workerRanges(), before);
  return y;
}

function trainOn(threads, B, steps) {
  assert.equal(setThreads(threads).st, 0);
  const { x, y } = fashion(B, 0, 'train');
  const model = lithe.loadBytes(fx.modelBytes).setSeed(11);
  const opt = lithe.adam({ learnRate: 0.002 });
  const before = workerRanges();
  try {
    const losses = [];
    for (let s = 0; s < steps; s++)
      losses.push(model.trainStep({ x: lithe.tensor(x, [B, 784]), y: lithe.tensor(y, [B]), optimizer: opt }));
    const after = model.predict(fx.x, [64, 784]).data;
    return { losses: Float32Array.from(losses), after, bytes: model.save({ optimizer: opt }), ranges: workerRanges() - before };
  } finally {
    model.dispose();
    opt.dispose();
  }
}

test('threads: predict on 2 threads is bit for bit predict on 1 (batch 1, 7, 64, 256)', () => {
  const model = lithe.loadBytes(fx.modelBytes);
  try {
    const { x } = fashion(256, 100);
    for (const B of [1, 7, 64, 256]) {
      const one = predictOn(1, model, x, B), two = predictOn(2, model, x, B);
      assert.deepEqual(bits(two), bits(one), `batch ${B}`);
    }
    assert.ok(maxAbsDiff(predictOn(2, model, fx.x, 64), fx.golden.data) <= 1e-6, 'and the native predictions within 1e-6');
  } finally {
    setThreads(2);
    model.dispose();
  }
});

test('threads: training (Adam, dropout) on 2 threads is bit for bit training on 1', () => {
  const one = trainOn(1, 128, 6), two = trainOn(2, 128, 6);
  setThreads(2);
  assert.ok(two.ranges > 0, 'the worker thread computed part of the steps');
  assert.deepEqual(bits(two.losses), bits(one.losses));
  assert.ok(two.losses[5] < two.losses[0], `the loss falls: ${two.losses}`);
  assert.deepEqual(bits(two.after), bits(one.after), 'predictions after training');
  assert.deepEqual(two.bytes, one.bytes, 'the saved model and optimizer state, byte for byte');
});

test('threads: the same bits as the plain SIMD module (another process, one thread)', () => {
  const model = lithe.loadBytes(fx.modelBytes);
  const mine = predictOn(2, model, fx.x, 64);
  model.dispose();
  const src = `import * as lithe from ${JSON.stringify(path.join(pkgDir, 'src/index.js'))};
    import fs from 'node:fs';
    const info = await lithe.init({ threads: 1 });
    const m = lithe.loadBytes(new Uint8Array(fs.readFileSync(${JSON.stringify(path.join(fx.work, 'model.lithe'))})));
    const x = new Float32Array(fs.readFileSync(0).buffer.slice(0));
    const y = m.predict(x, [64, 784]).data;
    process.stdout.write(JSON.stringify({ build: info.build, y: Buffer.from(y.buffer).toString('base64') }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', src], { input: Buffer.from(fx.x.buffer), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.build, 'simd');
  const theirs = new Float32Array(new Uint8Array(Buffer.from(out.y, 'base64')).buffer);
  assert.deepEqual(bits(mine), bits(theirs));
});

test('threads: more threads than workers started is LITHE_ERR_UNSUPPORTED, and 1..2 still work', () => {
  const r = setThreads(3);
  assert.equal(r.st, lithe.STATUS.UNSUPPORTED);
  assert.match(lithe.c().cstring(lithe.c().lithe_last_error()), /thread 3 of 3.*started 1 Web Workers.*lithe\.init\(\{ threads \}\)/);
  assert.equal(setThreads(1).threads, 1);
  assert.equal(setThreads(0).threads, 2, 'the default: the workers started, plus the caller');
});

// Node 20's V8 (11.3) loses locals cached in registers across memory.atomic.wait in its baseline
// compiler (Liftoff); threadpool.c keeps every wait in one out-of-line function because of it. A
// child process that never tiers up to TurboFan re-runs what broke (pools remade over and over,
// which failed within a few dozen rounds before) and a prediction on both thread counts.
test('threads: under Liftoff only (no tier-up), pools remade 300 times and predictions still bit for bit', () => {
  const src = `import * as lithe from ${JSON.stringify(path.join(pkgDir, 'src/index.js'))};
    import fs from 'node:fs';
    await lithe.init({ threads: 2 });
    const r = lithe.c();
    const name = r.allocString('cpu');
    r.check(r.lithe_backend_get(name, r.outPtr(0)));
    const cpu = r.readU32(r.outPtr(0));
    const bad = [];
    for (let i = 0; i < 300; i++) {
      const n = [3, 2, 1, 2, 4][i % 5];
      const st = r.lithe_backend_set_threads(cpu, n), t = r.lithe_backend_threads(cpu);
      if (n <= 2 ? st !== 0 || t !== n : st !== 7 || t !== 2) bad.push([i, n, st, t]);
    }
    const m = lithe.loadBytes(new Uint8Array(fs.readFileSync(${JSON.stringify(path.join(fx.work, 'model.lithe'))})));
    const x = new Float32Array(64 * 784).map((_, i) => ((i * 7919) % 255) / 255);
    r.check(r.lithe_backend_set_threads(cpu, 1));
    const one = m.predict(x, [64, 784]).data;
    r.check(r.lithe_backend_set_threads(cpu, 2));
    const two = m.predict(x, [64, 784]).data;
    let same = one.every((v, i) => Object.is(v, two[i]));
    // until the worker has computed (the caller takes over what a late worker has not claimed)
    for (let k = 0; k < 50 && r.lithe_js_thread_ranges() === 0; k++)
      same = same && m.predict(x, [64, 784]).data.every((v, i) => Object.is(v, one[i]));
    process.stdout.write(JSON.stringify({ threads: lithe.threads(), bad, same, ranges: r.lithe_js_thread_ranges() }));`;
  const script = path.join(fx.work, 'liftoff.mjs'); // a file, not -e: the worker threads inherit the flags
  fs.writeFileSync(script, src);
  const r = spawnSync(process.execPath, ['--liftoff', '--no-wasm-tier-up', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.threads, 2);
  assert.deepEqual(out.bad, []);
  assert.equal(out.same, true);
  assert.ok(out.ranges > 0);
});

// The engine bug itself, reported, not asserted (a newer Node may have fixed it): a function keeps
// x*3, x+1000 and x+7 in locals, waits (memory.atomic.wait32, 1 ms timeout) and returns their sum.
// Under Liftoff, Node 20's V8 returns 1020 for x = 5 instead of 1032.
test('threads: is the engine\'s Liftoff wait bug present? (reported only)', () => {
  const bytes = [0, 97, 115, 109, 1, 0, 0, 0, 1, 7, 1, 96, 2, 127, 127, 1, 127, 2, 16, 1, 3, 101, 110, 118, 6, 109, 101, 109,
    111, 114, 121, 2, 3, 1, 1, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 50, 1, 48, 1, 3, 127, 32, 0, 65, 3, 108, 33, 2, 32, 0, 65,
    232, 7, 106, 33, 3, 32, 0, 65, 7, 106, 33, 4, 65, 192, 0, 32, 1, 66, 192, 132, 61, 254, 1, 2, 0, 26, 32, 2, 32, 3, 106, 32,
    4, 106, 11];
  const src = `const m = new WebAssembly.Module(new Uint8Array(${JSON.stringify(bytes)}));
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    const f = new WebAssembly.Instance(m, { env: { memory } }).exports.f;
    process.stdout.write(String(f(5, 0)));`;
  for (const flags of [['--liftoff', '--no-wasm-tier-up'], ['--no-liftoff']]) {
    const r = spawnSync(process.execPath, [...flags, '-e', src], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    console.log(`# ${flags.join(' ')}: f(5) = ${r.stdout} (1032 is right)${r.stdout === '1032' ? '' : ': the engine loses locals across memory.atomic.wait'}`);
    if (flags[0] === '--no-liftoff') assert.equal(r.stdout, '1032', 'the optimizing compiler gets it right');
  }
});

// A convolution (the ONNX test's CNN from torch, test/onnx_golden.py): a batch's images go to the
// workers (each image's GEMM and its workspace, allocated on the worker), so 2 threads must give
// the bits of 1, and torch's numbers, for predictions and for one SGD step.
test('threads: a CNN from torch (.onnx): predictions and an SGD step, 2 threads bit for bit 1, torch within 1e-5', (t) => {
  const python = '/usr/bin/python3';
  if (!fs.existsSync(python)) return t.skip('needs /usr/bin/python3 with python3-torch');
  const work = fs.mkdtempSync(path.join(fx.work, 'onnx-'));
  const g = spawnSync(python, [path.join(pkgDir, 'test/onnx_golden.py'), work], { encoding: 'utf8' });
  assert.equal(g.status, 0, g.stderr);
  const x = npyRead(path.join(work, 'x.npy')), target = npyRead(path.join(work, 't.npy'));
  const golden = npyRead(path.join(work, 'y.npy')), after1 = npyRead(path.join(work, 'y_after.npy'));
  const onnx = fs.readFileSync(path.join(work, 'cnn.onnx'));
  const run = (threads) => {
    assert.equal(setThreads(threads).st, 0);
    const model = lithe.loadBytes(onnx), opt = lithe.sgd({ learnRate: 0.1, gradClip: 0 });
    try {
      const y = model.predict(x.data, x.shape).data;
      const loss = model.trainStep({ x: lithe.tensor(x.data, x.shape), y: lithe.tensor(target.data, target.shape), loss: 'l2', optimizer: opt });
      return { y, loss, after: model.predict(x.data, x.shape).data };
    } finally {
      model.dispose();
      opt.dispose();
    }
  };
  const two = run(2);
  const one = run(1);
  setThreads(2);
  assert.deepEqual(bits(two.y), bits(one.y));
  assert.equal(two.loss, one.loss);
  assert.deepEqual(bits(two.after), bits(one.after));
  assert.ok(maxAbsDiff(two.y, golden.data) <= 1e-5);
  assert.ok(maxAbsDiff(two.after, after1.data) <= 1e-5);
  // The worker's part: the caller takes over the images a late worker has not claimed (the pool's
  // stealing), and 4 images take it less time than waking the worker, so the worker computes in a
  // batch of 1,024 (the 4 images 256 times): there its images' bits are the caller's.
  const reps = 256, big = new Float32Array(x.data.length * reps);
  for (let r = 0; r < reps; r++) big.set(x.data, r * x.data.length);
  const shape = [x.shape[0] * reps, ...x.shape.slice(1)];
  const model = lithe.loadBytes(onnx);
  try {
    const before = workerRanges();
    let y2;
    for (let r = 0; r < 20 && workerRanges() === before; r++) y2 = model.predict(big, shape).data;
    assert.ok(workerRanges() > before, 'the worker thread computed part of it');
    assert.equal(setThreads(1).st, 0);
    const y1 = model.predict(big, shape).data;
    assert.deepEqual(bits(y2), bits(y1));
    for (let r = 0; r < reps; r++) assert.deepEqual(bits(y1.subarray(r * two.y.length, (r + 1) * two.y.length)), bits(two.y));
  } finally {
    setThreads(2);
    model.dispose();
  }
});
