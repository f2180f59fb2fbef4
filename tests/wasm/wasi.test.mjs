// lithe.wasm (the `wasi` preset) against the native lithe command on the same model and inputs:
// the native build is the oracle, never the wasm under test. Run by test.sh's wasm stage:
//   LITHE_NATIVE=build/ci/tools/lithe/lithe LITHE_WASI=build/wasi/tools/lithe/lithe.wasm \
//     node --test tests/wasm/wasi.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const native = path.resolve(root, process.env.LITHE_NATIVE ?? 'build/ci/tools/lithe/lithe');
const wasm = path.resolve(root, process.env.LITHE_WASI ?? 'build/wasi/tools/lithe/lithe.wasm');
const runner = path.join(root, 'tools/lithe/run-wasi.mjs');
const dataDir = '/usr/share/datasets/fashion-mnist';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-wasi-'));

function nat(args, opts = {}) {
  return spawnSync(native, args, { cwd: work, encoding: 'utf8', ...opts });
}
function wasi(args, opts = {}) {
  return spawnSync(process.execPath, [runner, wasm, ...args], { cwd: work, encoding: 'utf8', ...opts });
}
// The lines of train-mnist's report that do not depend on the clock.
const untimed = (out) => out.split('\n').map((l) => l.replace(/\s+[\d.]+ s\b.*$/, '').replace(/,? [\d.]+ s training.*$/, ''))
  .filter((l) => l && !l.startsWith('Fashion-MNIST'));

// .npy v1.0 for a float32 C-order array, and back: the tests' inputs and outputs.
function npyWrite(file, shape, f32) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const h = Buffer.alloc(10);
  h.write('\x93NUMPY', 0, 'latin1');
  h[6] = 1; h[7] = 0; h.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([h, Buffer.from(header, 'latin1'), Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength)]));
}
function npyRead(file) {
  const b = fs.readFileSync(file);
  const hl = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + hl).toString('latin1');
  assert.match(header, /'descr': '<f4'/);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const body = b.subarray(10 + hl);
  return { shape, data: new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)) };
}

before(() => {
  assert.ok(fs.existsSync(native), `native lithe not built: ${native}`);
  assert.ok(fs.existsSync(wasm), `lithe.wasm not built: ${wasm}`);
  // Uncompressed IDX files for the tests below that read the images themselves (both commands
  // also read the gzipped ones, with the command's own gunzip: tested after).
  fs.mkdirSync(path.join(work, 'data'));
  for (const f of fs.readdirSync(dataDir).filter((f) => f.endsWith('.gz')))
    fs.writeFileSync(path.join(work, 'data', f.slice(0, -3)), zlib.gunzipSync(fs.readFileSync(path.join(dataDir, f))));
});

after(() => fs.rmSync(work, { recursive: true, force: true }));

// The SGEMM microkernels of this WASI build (the SIMD128 5x8 and 4x8 ones with the preset's -msimd128)
// against their scalar twins bit for bit and the packed GEMM against float64
// (tests/test_gemm_ukernels.c, built beside lithe.wasm by the wasi preset).
test('gemm microkernels: SIMD128 against its scalar twin and float64', () => {
  const gemmTest = path.resolve(root, process.env.LITHE_WASI_GEMM_TEST ?? path.join(path.dirname(wasm), '../../test_gemm_ukernels.wasm'));
  const r = spawnSync(process.execPath, [runner, gemmTest], { cwd: work, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /gemm_ukernels: [1-9]\d* passed, 0 failed/);
  assert.match(r.stdout, /wasmsimd 5x8 .*the default/);
  assert.match(r.stdout, /wasmsimd 4x8 .*for some row counts/);
});

// The elementwise / row-wise kernel table of this WASI build (SIMD128, the preset's -msimd128)
// against the scalar table entry by entry, with -0, ±inf and NaN among the inputs too
// (tests/test_simd_tables.c and simd_tables.h, the checks test_simd runs natively).
test('SIMD128 elementwise kernel table: against the scalar twins', () => {
  const simdTest = path.resolve(root, process.env.LITHE_WASI_SIMD_TEST ?? path.join(path.dirname(wasm), '../../test_simd_tables.wasm'));
  const r = spawnSync(process.execPath, [runner, simdTest], { cwd: work, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /simd_tables: tables: scalar wasm_simd128\n/);
  assert.match(r.stdout, /simd_tables: wasm_simd128 \(4 lanes\) against scalar: ok/);
  assert.match(r.stdout, /simd_tables: [1-9]\d* passed, 0 failed/);
});

// The int8 GEMM's microkernels of this WASI build (SIMD128: i32x4.dot_i16x8_s) and the scalar one
// against int64 sums, and the int8 GEMM with each against the scalar kernel's bits and float64
// (tests/test_q8_ukernels.c, built beside lithe.wasm by the wasi preset).
test('int8 gemm microkernels: SIMD128 against int64 sums and the scalar kernel', () => {
  const q8Test = path.resolve(root, process.env.LITHE_WASI_Q8_TEST ?? path.join(path.dirname(wasm), '../../test_q8_ukernels.wasm'));
  const r = spawnSync(process.execPath, [runner, q8Test], { cwd: work, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /q8_ukernels: wasmsimd, the default\n/);
  assert.match(r.stdout, /q8_ukernels: [1-9]\d* passed, 0 failed/);
});

// The convolution backward through the shifted rows (backends/cpu/conv/backward.c) with the SIMD128
// kernel: the bits of the im2col / col2im path and float64 (tests/test_conv_bwd.c, built beside lithe.wasm).
test('conv backward through the shifted rows: the im2col path\'s bits', () => {
  const convTest = path.resolve(root, process.env.LITHE_WASI_CONV_BWD_TEST ?? path.join(path.dirname(wasm), '../../test_conv_bwd.wasm'));
  const r = spawnSync(process.execPath, [runner, convTest], { cwd: work, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /conv_bwd: [1-9]\d* passed, 0 failed/);
});

// The int8 convolution's SIMD128 tile (backends/cpu/conv/qconv_wasm.c, i32x4.dot_i16x8_s) against
// its scalar twin bit for bit, the twin and the backend's conv_q8 (which runs the tile here) against
// an int64 reference (tests/test_qconv.c, built beside lithe.wasm by the wasi preset).
test('int8 convolution: the SIMD128 tile against its scalar twin', () => {
  const qTest = path.resolve(root, process.env.LITHE_WASI_QCONV_TEST ?? path.join(path.dirname(wasm), '../../test_qconv.wasm'));
  const r = spawnSync(process.execPath, [runner, qTest], { cwd: work, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /qconv: conv_q8's kernel: simd128\n/);
  assert.doesNotMatch(r.stdout, /no conv_q8/);
  assert.match(r.stdout, /qconv: [1-9]\d* passed, 0 failed/);
});

// An int8 model (lithe convert --weights int8) in lithe.wasm: the SIMD128 int8 GEMM gives the native
// int8 kernels' output (exact int32 sums: the same bits up to the softmax), batch 64 and batch 1.
test('int8 weights: the same predictions as native', () => {
  const args = ['train-mnist', '--data', 'data', '--epochs', '1', '--limit', '1000', '--batch-size', '64', '--save', 'f32.lithe'];
  assert.equal(nat(args).status, 0);
  assert.equal(nat(['convert', '--weights', 'int8', 'f32.lithe', 'q8.lithe']).status, 0);
  const x = new Float32Array(64 * 784);
  const img = fs.readFileSync(path.join(work, 'data', 't10k-images-idx3-ubyte'));
  for (let i = 0; i < x.length; i++) x[i] = img[16 + i] / 255;
  npyWrite(path.join(work, 'xq.npy'), [64, 784], x);
  npyWrite(path.join(work, 'xq1.npy'), [1, 784], x.subarray(0, 784));
  for (const [inp, out] of [['xq.npy', 'yq'], ['xq1.npy', 'yq1']]) {
    const a = nat(['run', 'q8.lithe', '--input', inp, '--output', `${out}_native.npy`]);
    const b = wasi(['run', 'q8.lithe', '--input', inp, '--output', `${out}_wasi.npy`]);
    assert.equal(a.status, 0, a.stderr);
    assert.equal(b.status, 0, b.stderr);
    const ya = npyRead(path.join(work, `${out}_native.npy`)).data, yb = npyRead(path.join(work, `${out}_wasi.npy`)).data;
    let worst = 0;
    for (let i = 0; i < ya.length; i++) worst = Math.max(worst, Math.abs(ya[i] - yb[i]));
    assert.ok(worst <= 2e-6, `${inp}: wasi int8 vs native int8 ${worst}`);
  }
});

test('layers and version: the same lines', () => {
  for (const cmd of [['layers'], ['version']]) {
    const a = nat(cmd), b = wasi(cmd);
    assert.equal(b.status, 0, b.stderr);
    assert.equal(b.stdout, a.stdout);
  }
});

test('train-mnist: the same losses and accuracies as native, and a model file native reads', () => {
  const args = ['train-mnist', '--data', 'data', '--epochs', '1', '--limit', '2000', '--batch-size', '64'];
  const a = nat([...args, '--save', 'native.lithe']);
  const b = wasi([...args, '--save', 'wasi.lithe']);
  assert.equal(a.status, 0, a.stderr);
  assert.equal(b.status, 0, b.stderr);
  assert.deepEqual(untimed(b.stdout).map((l) => l.replace('wasi.lithe', 'native.lithe')), untimed(a.stdout));
  // the file written through WASI is read by the native command and says the same
  const ia = nat(['info', 'native.lithe']), ib = nat(['info', 'wasi.lithe']);
  assert.equal(ib.status, 0, ib.stderr);
  assert.equal(ib.stdout, ia.stdout);
});

// The WASI build has no zlib (Debian has none for wasm32-wasi): tools/lithe/gunzip.c reads the
// gzipped IDX files. Small ones made here by Node's zlib (a stored block for the labels, the best
// compression for the images) train the same as the plain files, natively and in WASI; a corrupt
// one is an error that says so; and Debian's own gzipped data set is read as it is installed.
test('train-mnist on gzipped IDX files: the same run as on the plain ones, in WASI and natively', () => {
  const n = 600;
  fs.mkdirSync(path.join(work, 'gz'));
  fs.mkdirSync(path.join(work, 'plain'));
  for (const split of ['train', 't10k']) {
    const img = fs.readFileSync(path.join(work, 'data', `${split}-images-idx3-ubyte`));
    const lab = fs.readFileSync(path.join(work, 'data', `${split}-labels-idx1-ubyte`));
    const images = Buffer.concat([img.subarray(0, 16), img.subarray(16, 16 + n * 784)]);
    const labels = Buffer.concat([lab.subarray(0, 8), lab.subarray(8, 8 + n)]);
    images.writeUInt32BE(n, 4);
    labels.writeUInt32BE(n, 4);
    fs.writeFileSync(path.join(work, 'plain', `${split}-images-idx3-ubyte`), images);
    fs.writeFileSync(path.join(work, 'plain', `${split}-labels-idx1-ubyte`), labels);
    fs.writeFileSync(path.join(work, 'gz', `${split}-images-idx3-ubyte.gz`), zlib.gzipSync(images, { level: 9 }));
    fs.writeFileSync(path.join(work, 'gz', `${split}-labels-idx1-ubyte.gz`), zlib.gzipSync(labels, { level: 0 }));
  }
  const args = ['train-mnist', '--epochs', '1', '--batch-size', '50'];
  const plain = nat([...args, '--data', 'plain']);
  assert.equal(plain.status, 0, plain.stderr);
  assert.match(plain.stdout, new RegExp(`^Fashion-MNIST: ${n} training and ${n} test examples`));
  for (const [who, run] of [['native', nat], ['wasi', wasi]]) {
    const r = run([...args, '--data', 'gz']);
    assert.equal(r.status, 0, `${who}: ${r.stderr}`);
    assert.deepEqual(untimed(r.stdout), untimed(plain.stdout), who);
  }
  // a corrupt file: lithe's message, exit 1, no trap
  const bad = Buffer.from(fs.readFileSync(path.join(work, 'gz', 't10k-images-idx3-ubyte.gz')));
  bad[bad.length - 8] ^= 0xff; // the CRC-32
  fs.mkdirSync(path.join(work, 'badgz'));
  for (const f of fs.readdirSync(path.join(work, 'gz'))) fs.copyFileSync(path.join(work, 'gz', f), path.join(work, 'badgz', f));
  fs.writeFileSync(path.join(work, 'badgz', 't10k-images-idx3-ubyte.gz'), bad);
  const r = wasi([...args, '--data', 'badgz']);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /t10k-images-idx3-ubyte\.gz: not a readable gzip file: CRC-32 mismatch/);
  assert.doesNotMatch(r.stderr, /trapped|RuntimeError/);
  // Debian's dataset-fashion-mnist as installed (the .gz files only)
  const d = wasi(['train-mnist', '--epochs', '1', '--limit', '500', '--batch-size', '50']);
  const e = nat(['train-mnist', '--epochs', '1', '--limit', '500', '--batch-size', '50']);
  assert.equal(d.status, 0, d.stderr);
  assert.deepEqual(untimed(d.stdout), untimed(e.stdout));
  assert.match(d.stdout, /^Fashion-MNIST: 500 training and 500 test examples of 784 pixels, from \/usr\/share\/datasets\/fashion-mnist/);
});

test('--help, --version and a wrong option: the same in WASI as natively', () => {
  for (const args of [['--version'], ['train-mnist', '--help'], ['info', '--help'], ['info', '--bogus'], ['train-mnist', '--epochs']]) {
    const a = nat(args), b = wasi(args);
    assert.equal(b.status, a.status, `${args.join(' ')}: ${b.stderr}`);
    assert.equal(b.stdout, a.stdout, args.join(' '));
    assert.equal(b.stderr, a.stderr, args.join(' '));
  }
  assert.equal(wasi(['info', '--bogus']).status, 2);
});

test('info and run: identical predictions (within 1e-6) on the same model and inputs', () => {
  assert.ok(fs.existsSync(path.join(work, 'native.lithe')));
  const a = nat(['info', 'native.lithe']), b = wasi(['info', 'native.lithe']);
  assert.equal(b.status, 0, b.stderr);
  assert.equal(b.stdout, a.stdout);
  // 100 test images scaled to [0, 1], as train-mnist scales them
  const img = fs.readFileSync(path.join(work, 'data', 't10k-images-idx3-ubyte')).subarray(16, 16 + 100 * 784);
  npyWrite(path.join(work, 'x.npy'), [100, 784], Float32Array.from(img, (v) => v / 255));
  const ra = nat(['run', 'native.lithe', '--input', 'x.npy', '--output', 'y_native.npy']);
  const rb = wasi(['run', 'native.lithe', '--input', 'x.npy', '--output', 'y_wasi.npy']);
  assert.equal(ra.status, 0, ra.stderr);
  assert.equal(rb.status, 0, rb.stderr);
  const ya = npyRead(path.join(work, 'y_native.npy')), yb = npyRead(path.join(work, 'y_wasi.npy'));
  assert.deepEqual(yb.shape, [100, 10]);
  assert.deepEqual(yb.shape, ya.shape);
  let worst = 0;
  for (let i = 0; i < ya.data.length; i++) worst = Math.max(worst, Math.abs(ya.data[i] - yb.data[i]));
  assert.ok(worst <= 1e-6, `largest difference ${worst}`);
});

test('bad paths and unreadable files are errors with a message, not traps', () => {
  const cases = [
    [['info', 'no-such-model.lithe'], /no-such-model\.lithe/],
    [['info', '/nonexistent/dir/model.lithe'], /nonexistent/],
    [['run', 'native.lithe', '--input', 'missing.npy', '--output', 'y.npy'], /missing\.npy/],
    [['train-mnist', '--data', 'nowhere', '--limit', '10'], /cannot read Fashion-MNIST/],
  ];
  fs.writeFileSync(path.join(work, 'truncated.lithe'), fs.readFileSync(path.join(work, 'native.lithe')).subarray(0, 1000));
  fs.writeFileSync(path.join(work, 'garbage.lithe'), Buffer.from('not a model at all'));
  cases.push([['info', 'truncated.lithe'], /LITHE_ERR_FORMAT/], [['info', 'garbage.lithe'], /LITHE_ERR_FORMAT/]);
  // a directory where a file is expected, and an output into a directory that does not exist
  cases.push([['info', 'data'], /data/]);
  cases.push([['run', 'native.lithe', '--input', 'x.npy', '--output', 'no/such/dir/y.npy'], /no\/such\/dir/]);
  for (const [args, re] of cases) {
    const r = wasi(args);
    assert.ok(r.status !== 0 && r.status !== 134, `${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
    assert.doesNotMatch(r.stderr, /trapped|RuntimeError|unreachable/, args.join(' '));
    assert.match(r.stderr, re, args.join(' '));
  }
  // A sandbox that preopens only the working directory: an absolute path outside it is refused
  // by the runtime, and lithe reports that as an error.
  const r = wasi(['info', '/etc/passwd'], { env: { ...process.env, LITHE_WASI_DIRS: '.' } });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /LITHE_ERR_IO/);
});

test('bench: the same report format natively and in WASI, and the same prediction from a synthetic input', () => {
  assert.ok(fs.existsSync(path.join(work, 'native.lithe')));
  const stats = /median_ms=[\d.]+ min_ms=[\d.]+ max_ms=[\d.]+ mean_ms=[\d.]+ runs=3 warmup_runs=1/;
  const cases = [
    // a .lithe model: the input shape (batch, nI) comes from its first layer
    [['bench', 'native.lithe', '--batch', '7', '--quick', '--threads', '1', '--output', 'bench_NAME.npy'], /mode=predict batch=7 device=cpu threads=1 /],
    [['bench', 'native.lithe', '--batch', '4', '--train', '--quick', '--threads', '1'], /mode=train batch=4 device=cpu threads=1 adam=thinc loss=cce /],
    [['bench', 'native.lithe', '--batch', '4', '--train', '--adam', 'torch', '--quick', '--threads', '1'], /mode=train batch=4 device=cpu threads=1 adam=torch loss=cce /],
    [['bench', '--gemm', '5x6x7', '--quick', '--threads', '1'], /gemm=5x6x7 layout=NT device=cpu threads=1 /],
  ];
  for (const [args, re] of cases) {
    for (const [who, run] of [['native', nat], ['wasi', wasi]]) {
      const r = run(args.map((a) => a.replace('NAME', who)));
      assert.equal(r.status, 0, `${who} ${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, re, `${who}: ${r.stdout}`);
      assert.match(r.stdout, stats, `${who}: ${r.stdout}`);
    }
  }
  // the synthetic input is lithe's Philox stream: the same numbers, so the same prediction
  const ya = npyRead(path.join(work, 'bench_native.npy')), yb = npyRead(path.join(work, 'bench_wasi.npy'));
  assert.deepEqual(yb.shape, [7, 10]);
  let worst = 0;
  for (let i = 0; i < ya.data.length; i++) worst = Math.max(worst, Math.abs(ya.data[i] - yb.data[i]));
  assert.ok(worst <= 1e-6, `largest difference ${worst}`);
  // a thread count this build lacks is an error with a message, not a trap
  const r = wasi(['bench', '--gemm', '5x6x7', '--quick', '--threads', '2']);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /--threads: LITHE_ERR_UNSUPPORTED/);
});
