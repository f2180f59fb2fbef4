// The package's tests, run once per build (package.test.mjs: the build init() picks, which is
// SIMD128 in Node 20; scalar.test.mjs: the scalar one; threads.test.mjs: the threads module with
// two threads). Goldens come from the native build.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as lithe from '../src/index.js';
import { nativeFixture, npyRead, npyWrite, maxAbsDiff, fashion, repoDir } from './fixtures.mjs';

export function suite({ simd, threads = 1 }) {
  let fx;
  before(async () => {
    fx = nativeFixture();
    const t0 = performance.now();
    const info = await lithe.init(simd === undefined ? { threads } : { simd, threads });
    const model = await lithe.load(path.join(fx.work, 'model.lithe'));
    model.predict(lithe.tensor(fx.x.slice(0, 784), [1, 784]));
    const ms = performance.now() - t0;
    model.dispose();
    console.log(`# lithe ${info.version}, ${info.build} build, ${info.threads} thread(s): init() + load + first prediction ${ms.toFixed(1)} ms`);
  });
  after(() => fx?.cleanup());

  test('init picks the expected build and is idempotent', async () => {
    const again = await lithe.init();
    assert.equal(again.simd, simd ?? lithe.simdSupported());
    assert.equal(lithe.usingSimd(), again.simd);
    assert.equal(again.threads, threads);
    assert.equal(lithe.threads(), threads);
    // (the relaxed-SIMD build only where the engine validates relaxed SIMD: not Node 20's V8 11.3)
    const relaxed = lithe.relaxedSimdSupported();
    if (process.versions.node.startsWith('20.')) assert.equal(relaxed, false, "Node 20's V8 has no relaxed SIMD");
    assert.equal(again.build, threads > 1 ? 'simd-threads' : again.simd ? (relaxed ? 'relaxed-simd' : 'simd') : 'scalar');
    assert.match(lithe.version(), /^\d+\.\d+\.\d+/);
    // one version (CONTRIBUTING.md): the C library's is the package's
    assert.equal(lithe.version(), JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version);
  });

  test('load + predict: the native predictions within 1e-6', async () => {
    const model = lithe.loadBytes(fx.modelBytes);
    try {
      assert.equal(model.name, 'relu>>dropout>>relu>>dropout>>softmax');
      // (the threads build has the importers built in: 'built in')
      assert.ok(!(lithe.c().importers instanceof WebAssembly.Instance), 'a .lithe MLP linked the importer module (ONNX, TF.js), which it does not need');
      const y = model.predict(lithe.tensor(fx.x, [64, 784]));
      assert.deepEqual(y.shape, fx.golden.shape);
      assert.ok(y.data instanceof Float32Array);
      const worst = maxAbsDiff(y.data, fx.golden.data);
      assert.ok(worst <= 1e-6, `largest difference from native: ${worst}`);
      // the other input forms: {data, shape}, a TypedArray with a shape
      assert.deepEqual(model.predict({ data: fx.x, shape: [64, 784] }).data, y.data);
      assert.deepEqual(model.predict(fx.x, [64, 784]).data, y.data);
      // a file path and a file: URL load too (Node)
      const m2 = await lithe.load(new URL(`file://${fx.work}/model.lithe`));
      assert.deepEqual(m2.predict(fx.x, [64, 784]).data, y.data);
      m2.dispose();
      // a path is a path, not a URL: '#', '?' and spaces are just characters
      const odd = path.join(fx.work, 'a dir #1?');
      fs.mkdirSync(odd, { recursive: true });
      fs.writeFileSync(path.join(odd, 'm.lithe'), fx.modelBytes);
      const m3 = await lithe.load(path.join(odd, 'm.lithe'));
      assert.deepEqual(m3.predict(fx.x, [64, 784]).data, y.data);
      m3.dispose();
    } finally {
      model.dispose();
    }
  });

  test('TF.js layers models: { modelJson, weights } and TF.js artifacts (NHWC in, the flatten order kept)', async () => {
    // a 1x1 Conv2D with an identity kernel (channels-first inside lithe), then Flatten: the output
    // is the input in TF.js's (h, w, c) order; tests/test_tfjs.c checks real TF.js models
    const topology = { class_name: 'Sequential', config: { name: 's', layers: [
      { class_name: 'Conv2D', config: { name: 'c', filters: 3, kernel_size: [1, 1], use_bias: false, batch_input_shape: [null, 2, 2, 3] } },
      { class_name: 'Flatten', config: { name: 'f' } }] } };
    const weightSpecs = [{ name: 'c/kernel', shape: [1, 1, 3, 3], dtype: 'float32' }];
    const eye = new Float32Array([1, 0, 0, 0, 1, 0, 0, 0, 1]);
    const x = Float32Array.from({ length: 12 }, (_, i) => i);
    const fromJson = await lithe.load({ modelJson: JSON.stringify({ format: 'layers-model', modelTopology: topology,
      weightsManifest: [{ paths: ['a.bin', 'b.bin'], weights: weightSpecs }] }),
    weights: [new Uint8Array(eye.buffer, 0, 20), new Uint8Array(eye.buffer, 20, 16)] }); // two shards
    const fromArtifacts = lithe.loadTfjs({ modelTopology: topology, weightSpecs, weightData: eye.buffer });
    try {
      for (const m of [fromJson, fromArtifacts]) {
        const y = m.predict(x, [1, 2, 2, 3]);
        assert.deepEqual(y.shape, [1, 12]);
        assert.deepEqual(Array.from(y.data), Array.from(x));
      }
      // it saves as .lithe like any model
      const again = lithe.loadBytes(fromJson.save());
      assert.deepEqual(Array.from(again.predict(x, [1, 2, 2, 3]).data), Array.from(x));
      again.dispose();
      assert.throws(() => lithe.loadTfjs({ modelJson: '{"format":"layers-model"}', weights: [] }),
        (e) => e instanceof lithe.LitheError && /weightsManifest|modelTopology/.test(e.message));
      assert.throws(() => lithe.loadTfjs({ modelTopology: topology, weightSpecs, weightData: eye.buffer.slice(0, 32) }),
        (e) => e instanceof lithe.LitheError && e.statusName === 'LITHE_ERR_FORMAT' && /short or missing shard/.test(e.message));
    } finally {
      fromJson.dispose();
      fromArtifacts.dispose();
    }
  });

  test('trainStep: the native training loop step for step (losses and predictions after)', (t) => {
    const python = '/usr/bin/python3';
    const lib = ['build/ci/liblithe.so', 'build/default/liblithe.so'].map((p) => path.join(repoDir, p)).find(fs.existsSync);
    if (!fs.existsSync(python) || !lib) return t.skip('needs /usr/bin/python3 and the native liblithe.so (ci preset)');
    const B = 32, steps = 5;
    npyWrite(path.join(fx.work, 'xb.npy'), [B, 784], fx.x.subarray(0, B * 784));
    const labels = fx.labels.subarray(0, B);
    npyWrite(path.join(fx.work, 'yb.npy'), [B], Float32Array.from(labels));
    const r = spawnSync(python, [path.join(repoDir, 'bindings/js/test/native_train.py'), path.join(fx.work, 'model.lithe'),
      path.join(fx.work, 'xb.npy'), path.join(fx.work, 'yb.npy'), String(steps), fx.work],
    { encoding: 'utf8', env: { ...process.env, PYTHONPATH: path.join(repoDir, 'shims/python'), LITHE_LIBRARY: lib } });
    assert.equal(r.status, 0, r.stderr);
    const nativeLosses = JSON.parse(fs.readFileSync(path.join(fx.work, 'losses.json'), 'utf8'));
    const nativeY = npyRead(path.join(fx.work, 'y_trained.npy'));

    const model = lithe.loadBytes(fx.modelBytes).setSeed(7); // the same dropout masks as native
    const opt = lithe.adam({ learnRate: 0.001 });
    try {
      const x = lithe.tensor(fx.x.slice(0, B * 784), [B, 784]);
      const y = lithe.tensor(Int32Array.from(labels), [B]);
      const losses = [];
      for (let i = 0; i < steps; i++) losses.push(model.trainStep({ x, y, loss: 'categorical_crossentropy', optimizer: opt, report: 'thinc' }));
      for (let i = 0; i < steps; i++)
        assert.ok(Math.abs(losses[i] - nativeLosses[i]) <= 1e-6 + 1e-5 * nativeLosses[i], `step ${i}: ${losses[i]} vs native ${nativeLosses[i]}`);
      assert.ok(losses[steps - 1] < losses[0], `the loss falls: ${losses}`);
      const worst = maxAbsDiff(model.predict(x).data, nativeY.data);
      assert.ok(worst <= 1e-5, `predictions after training differ from native by ${worst}`);
    } finally {
      model.dispose();
      opt.dispose();
    }
  });

  test('trainStep: float targets, l2, SGD; each loss falls', () => {
    const B = 16;
    const x = lithe.tensor(fx.x.slice(0, B * 784), [B, 784]);
    const onehot = new Float32Array(B * 10);
    for (let i = 0; i < B; i++) onehot[i * 10 + fx.labels[i]] = 1;
    for (const [loss, y, learnRate] of [['categorical_crossentropy', lithe.tensor(onehot, [B, 10]), 0.1],
      ['l2', { data: onehot, shape: [B, 10] }, 0.5]]) {
      const model = lithe.loadBytes(fx.modelBytes).setSeed(3);
      const opt = lithe.sgd({ learnRate });
      try {
        const losses = [];
        for (let i = 0; i < 15; i++) losses.push(model.trainStep({ x, y, loss, optimizer: opt }));
        assert.ok(losses.every(Number.isFinite));
        const first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[12] + losses[13] + losses[14]) / 3;
        assert.ok(last < first, `${loss}: ${losses}`);
      } finally {
        model.dispose();
        opt.dispose();
      }
    }
  });

  test('trainStep reports the loss PyTorch and tfjs report (cross-entropy, MSE), or Thinc\'s figure if asked', () => {
    // dropout off: the training forward is then predict's, and the figures are checked against
    // float64 sums of predict's output here
    const B = 8, C = 10;
    const x = lithe.tensor(fx.x.slice(0, B * 784), [B, 784]);
    const labels = Int32Array.from(fx.labels.subarray(0, B));
    const onehot = new Float32Array(B * C);
    for (let i = 0; i < B; i++) onehot[i * C + labels[i]] = 1;
    const model = lithe.loadBytes(fx.modelBytes);
    const opt = lithe.sgd({ learnRate: 0.05 });
    const near = (got, want, what) => assert.ok(Math.abs(got - want) <= 1e-6 + 2e-5 * Math.abs(want), `${what}: ${got} vs ${want}`);
    try {
      const c = lithe.c();
      c.check(c.lithe_model_set_dropout_rate(model.ptr, 0));
      for (const [loss, y, report, want] of [
        ['categorical_crossentropy', labels, undefined, (p) => -p.reduce((s, _, k) => s + (k % C === labels[Math.floor(k / C)] ? Math.log(p[k]) : 0), 0) / B],
        ['categorical_crossentropy', labels, 'thinc', (p) => p.reduce((s, v, k) => s + ((v - onehot[k]) / B) ** 2, 0)],
        ['l2', lithe.tensor(onehot, [B, C]), undefined, (p) => p.reduce((s, v, k) => s + (v - onehot[k]) ** 2, 0) / (B * C)],
        ['l2', lithe.tensor(onehot, [B, C]), 'thinc', (p) => p.reduce((s, v, k) => s + ((v - onehot[k]) / B) ** 2, 0)]]) {
        const p = Array.from(model.predict(x).data, Number);
        const got = model.trainStep({ x, y, loss, optimizer: opt, ...(report ? { report } : {}) });
        near(got, want(p), `${loss} ${report ?? 'loss'}`);
      }
    } finally {
      model.dispose();
      opt.dispose();
    }
  });

  test('trainStep with l2 fine-tunes a sequence model: (B, T, N) outputs', async () => {
    // a TF.js Conv1D over (B, T=5, 3) -> (B, 5, 2): Thinc's L2Distance takes any equal shapes
    const seq = await lithe.load({ modelTopology: { class_name: 'Sequential', config: { name: 's', layers: [
      { class_name: 'Conv1D', config: { name: 'c', filters: 2, kernel_size: [1], use_bias: false, batch_input_shape: [null, 5, 3] } }] } },
    weightSpecs: [{ name: 'c/kernel', shape: [1, 3, 2], dtype: 'float32' }],
    weightData: new Float32Array([0.1, -0.2, 0.3, 0.05, -0.1, 0.2]).buffer });
    const opt = lithe.sgd({ learnRate: 0.5 });
    try {
      const x = lithe.tensor(new Float32Array(4 * 5 * 3).map((_, i) => Math.sin(i)), [4, 5, 3]);
      const y = lithe.tensor(new Float32Array(4 * 5 * 2).map((_, i) => Math.cos(i) / 2), [4, 5, 2]);
      const losses = [];
      for (let i = 0; i < 20; i++) losses.push(seq.trainStep({ x, y, loss: 'l2', optimizer: opt }));
      assert.ok(losses[19] < 0.8 * losses[0], `the mean squared error falls: ${losses[0]} -> ${losses[19]}`);
      assert.throws(() => seq.trainStep({ x, y: lithe.tensor(new Float32Array(40), [4, 10]), loss: 'l2', optimizer: opt }),
        (e) => e instanceof lithe.LitheError && e.statusName === 'LITHE_ERR_SHAPE' && /\(4, 5, 2\) vs truths \(4, 10\)/.test(e.message));
    } finally {
      seq.dispose();
      opt.dispose();
    }
  });

  test('resizeOutput: a new class, the old ones kept (their ratios unchanged)', () => {
    const model = lithe.loadBytes(fx.modelBytes).setSeed(1); // dropout masks: the same run every time
    const opt = lithe.adam({ learnRate: 0.001 });
    try {
      const x = lithe.tensor(fx.x.slice(0, 8 * 784), [8, 784]);
      const before10 = model.predict(x);
      model.resizeOutput(11);
      const after11 = model.predict(x);
      assert.deepEqual(after11.shape, [8, 11]);
      // new rows are zero: softmax over the old logits plus a zero one, so old ratios hold
      for (let r = 0; r < 8; r++) {
        const scale = after11.data[r * 11] / before10.data[r * 10];
        for (let j = 0; j < 10; j++)
          assert.ok(Math.abs(after11.data[r * 11 + j] - scale * before10.data[r * 10 + j]) <= 1e-6, `row ${r} class ${j}`);
      }
      // training on class 10 teaches it
      const y = lithe.tensor(new Int32Array(8).fill(10), [8]);
      for (let i = 0; i < 30; i++) model.trainStep({ x, y, optimizer: opt });
      assert.deepEqual(Array.from(model.predict(x).argmax()), new Array(8).fill(10));
      // growing again resizes the same (now resizable) node; shrinking is refused
      model.resizeOutput(12);
      assert.deepEqual(model.predict(x).shape, [8, 12]);
      assert.throws(() => model.resizeOutput(5), (e) => e instanceof lithe.LitheError && e.statusName === 'LITHE_ERR_VALUE');
    } finally {
      model.dispose();
      opt.dispose();
    }
  });

  test('save/load round trip: same predictions in wasm, and the native command reads the file', () => {
    const model = lithe.loadBytes(fx.modelBytes);
    const opt = lithe.adam();
    try {
      model.resizeOutput(11);
      const x = lithe.tensor(fx.x, [64, 784]);
      model.trainStep({ x, y: fx.labels, optimizer: opt });
      const y1 = model.predict(x);
      const bytes = model.save();
      assert.ok(bytes instanceof Uint8Array && bytes.length > 1000);
      const back = lithe.loadBytes(bytes);
      assert.deepEqual(back.predict(x).data, y1.data);
      back.dispose();
      const withOpt = model.save({ optimizer: opt });
      assert.ok(withOpt.length > bytes.length, 'the optimizer state is included');
      // native: the file the wasm wrote predicts the same
      fs.writeFileSync(path.join(fx.work, 'js.lithe'), bytes);
      fx.run(['run', 'js.lithe', '--input', 'x.npy', '--output', 'y_js.npy']);
      const yn = npyRead(path.join(fx.work, 'y_js.npy'));
      assert.deepEqual(yn.shape, [64, 11]);
      assert.ok(maxAbsDiff(yn.data, y1.data) <= 1e-6);
    } finally {
      model.dispose();
      opt.dispose();
    }
  });

  test('errors: a LitheError with lithe\'s message, and the instance stays usable', async () => {
    const model = lithe.loadBytes(fx.modelBytes);
    const opt = lithe.adam();
    try {
      assert.throws(() => model.predict(new Float32Array(783), [1, 783]),
        (e) => e instanceof lithe.LitheError && e.statusName === 'LITHE_ERR_SHAPE' && /input width 783 does not match nI=784/.test(e.message));
      assert.throws(() => lithe.loadBytes(new Uint8Array([1, 2, 3])),
        (e) => e instanceof lithe.LitheError && e.statusName === 'LITHE_ERR_FORMAT');
      assert.throws(() => lithe.loadBytes(fx.modelBytes.slice(0, 2000)), (e) => e.statusName === 'LITHE_ERR_FORMAT');
      const x = lithe.tensor(fx.x.slice(0, 2 * 784), [2, 784]);
      assert.throws(() => model.trainStep({ x, y: lithe.tensor(Int32Array.from([0, 12]), [2]), optimizer: opt }),
        (e) => e.statusName === 'LITHE_ERR_VALUE');
      assert.throws(() => model.trainStep({ x, y: lithe.tensor(Int32Array.from([0, 1, 2]), [3]), optimizer: opt }),
        (e) => e instanceof lithe.LitheError);
      // every error is a LitheError: the JS layer's own checks, files and fetches too
      const lerr = (name, re = /./) => (e) => e instanceof lithe.LitheError && e.statusName === name && re.test(e.message);
      assert.throws(() => model.trainStep({ x, y: [0, 1], loss: 'hinge', optimizer: opt }), lerr('LITHE_ERR_VALUE', /unknown loss 'hinge'/));
      assert.throws(() => model.trainStep({ x, y: [0, 1], optimizer: opt, report: 'sum' }), lerr('LITHE_ERR_VALUE', /unknown report/));
      assert.throws(() => model.trainStep({ x, y: [0, 1] }), lerr('LITHE_ERR_INVALID_ARG', /needs an optimizer/));
      assert.throws(() => lithe.tensor(new Float32Array(5), [2, 3]), lerr('LITHE_ERR_SHAPE'));
      assert.throws(() => lithe.tensor(new Float64Array(6), [2, 3]), lerr('LITHE_ERR_DTYPE'));
      assert.throws(() => model.predict('x'), lerr('LITHE_ERR_INVALID_ARG'));
      assert.throws(() => lithe.sgd({}), lerr('LITHE_ERR_INVALID_ARG'));
      // integers are checked before WebAssembly cuts them to 32 / 64 bits (2 ** 32 + 5 was 5)
      const badInt = lerr('LITHE_ERR_INVALID_ARG', /must be an integer in/);
      for (const n of [2 ** 32 + 5, 2 ** 31, 0, -1, 1.5, NaN, '12', 10n]) assert.throws(() => model.resizeOutput(n), badInt);
      for (const s of [-1, 2 ** 64, 1.5, 2n ** 64n, -1n]) assert.throws(() => model.setSeed(s), badInt);
      model.setSeed(2n ** 64n - 1n).setSeed(2 ** 53 - 1);
      assert.throws(() => model.trainStep({ x, y: [0, 2 ** 32 + 1], optimizer: opt }), badInt);
      assert.throws(() => lithe.tensor(new Float32Array(0), [2 ** 32, 0]), lerr('LITHE_ERR_SHAPE'));
      assert.throws(() => lithe.adam({ learnRate: -1 }), (e) => e.statusName === 'LITHE_ERR_VALUE');
      // a missing model file: LITHE_ERR_IO naming the file, Node's error as the cause
      await assert.rejects(lithe.load('/nonexistent/model.lithe'),
        (e) => lerr('LITHE_ERR_IO', /'\/nonexistent\/model\.lithe'.*ENOENT/)(e) && e.cause?.code === 'ENOENT');
      await assert.rejects(lithe.load(new URL('file:///nonexistent/m.lithe')), lerr('LITHE_ERR_IO', /ENOENT/));
      // still usable: the same prediction as before the errors
      const y = model.predict(lithe.tensor(fx.x, [64, 784]));
      assert.ok(maxAbsDiff(y.data, fx.golden.data) <= 1e-6);
      // dispose twice is fine; use after dispose is a clear error, not a crash
      model.dispose();
      model.dispose();
      assert.equal(model.disposed, true);
      assert.throws(() => model.predict(x), lerr('LITHE_ERR_STATE', /used after dispose/));
    } finally {
      model.dispose();
      opt.dispose();
    }
  });

  test('the C-mirror layer: lithe_* functions by name', () => {
    const c = lithe.c();
    assert.equal(c.cstring(c.lithe_status_str(2)), 'LITHE_ERR_SHAPE');
    const p = c.allocBytes(fx.modelBytes);
    try {
      c.check(c.lithe_model_load_bytes(p, fx.modelBytes.length, c.outPtr(0)));
    } finally {
      c.free(p);
    }
    const m = c.readU32(c.outPtr(0));
    assert.equal(c.cstring(c.lithe_model_layer_type(m)), 'chain.v1');
    assert.equal(c.lithe_model_n_layers(m), 3); // chain(chain(relu, dropout) x 2, softmax)
    c.lithe_model_free(m);
  });

  test('predict keeps its input tensor between calls: changing batches and values never give stale outputs', () => {
    const model = lithe.loadBytes(fx.modelBytes);
    try {
      const rows = (start, n) => {
        const x = new Float32Array(n * 784);
        for (let i = 0; i < n; i++) x.set(fx.x.subarray(((start + i) % 64) * 784, ((start + i) % 64 + 1) * 784), i * 784);
        return x;
      };
      const check = (y, start, n, what) => {
        assert.deepEqual(y.shape, [n, 10], what);
        for (let i = 0; i < n; i++) {
          const g = fx.golden.data.subarray(((start + i) % 64) * 10, ((start + i) % 64 + 1) * 10);
          const worst = maxAbsDiff(y.data.subarray(i * 10, (i + 1) * 10), g);
          assert.ok(worst <= 1e-6, `${what}: row ${i} is ${worst} from native's row ${(start + i) % 64}`);
        }
      };
      // the same shape with new values each call (the kept tensor refilled), then other batch sizes
      // (a new one kept), back again, one TypedArray written in place between calls, and a batch
      // over the 1 MiB kept (released after its call) between two that fit
      const plan = [[0, 1], [1, 1], [2, 1], [3, 5], [9, 5], [4, 64], [7, 1], [20, 3], [21, 3], [5, 400], [6, 1], [8, 1]];
      for (const [start, n] of plan) check(model.predict(rows(start, n), [n, 784]), start, n, `batch ${n} from row ${start}`);
      const t = lithe.tensor(rows(10, 2), [2, 784]);
      check(model.predict(t), 10, 2, 'a Tensor');
      t.data.set(rows(30, 2));
      check(model.predict(t), 30, 2, 'the same Tensor written in place');
      // another model's predict with the same shape gets its own output from the same kept tensor
      const m2 = lithe.loadBytes(fx.modelBytes);
      check(m2.predict(rows(40, 2), [2, 784]), 40, 2, 'a second model');
      check(model.predict(rows(41, 2), [2, 784]), 41, 2, 'the first model again');
      m2.dispose();
    } finally {
      model.dispose();
    }
    // lithe_js_tensor_reuse hands the data back only while nothing else holds the tensor or its storage
    const c = lithe.c();
    const sh = c.malloc(8);
    c.i32().set([2, 3], sh >>> 2);
    c.check(c.lithe_js_tensor_new(0, 2, sh, c.outPtr(0)));
    const tp = c.readU32(c.outPtr(0));
    assert.equal(c.lithe_js_tensor_reuse(tp), c.lithe_tensor_data(tp));
    c.lithe_tensor_retain(tp);
    assert.equal(c.lithe_js_tensor_reuse(tp), 0, 'a tensor someone else holds was handed out for writing');
    c.lithe_tensor_release(tp);
    c.i32().set([6, 0], sh >>> 2); // (one int64 extent)
    c.check(c.lithe_tensor_reshape(tp, 1, sh, c.outPtr(0)));
    assert.equal(c.lithe_js_tensor_reuse(tp), 0, 'a tensor whose storage a view holds was handed out for writing');
    c.lithe_tensor_release(c.readU32(c.outPtr(0)));
    assert.notEqual(c.lithe_js_tensor_reuse(tp), 0);
    c.lithe_tensor_release(tp);
    c.free(sh);
  });

  test('memory does not grow over many calls (everything per call is released)', () => {
    const model = lithe.loadBytes(fx.modelBytes);
    const opt = lithe.adam();
    const x = lithe.tensor(fx.x.slice(0, 16 * 784), [16, 784]);
    const y = lithe.tensor(fx.labels.slice(0, 16), [16]);
    for (let i = 0; i < 20; i++) { model.predict(x); model.trainStep({ x, y, optimizer: opt }); }
    const size = lithe.c().memory.buffer.byteLength;
    for (let i = 0; i < 200; i++) { model.predict(x); model.trainStep({ x, y, optimizer: opt }); }
    assert.equal(lithe.c().memory.buffer.byteLength, size);
    model.dispose();
    opt.dispose();
  });
  // the fixture, for more tests in the same file (one native training per process)
  return { fixture: () => fx };
}
