// Shared by bench's Node runners: .npy reading/writing, the timing protocol of bench/README.md
// (warm-up >= 5 runs and >= 1 s, so V8 has tiered the wasm up; then >= 30 timed runs and >= 1.5 s,
// at most 2000; --max-s caps a slow model), and max |y - ref|.
import fs from 'node:fs';

export function npyRead(file) {
  const b = fs.readFileSync(file);
  const hlen = b[8] === 1 || b[6] === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = b[6] === 1 ? 10 : 12;
  const header = b.toString('latin1', off, off + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const raw = b.subarray(off + hlen);
  const copy = new Uint8Array(raw.length);
  copy.set(raw);
  const T = { '<f4': Float32Array, '<i4': Int32Array, '<i8': BigInt64Array }[descr];
  if (!T) throw new Error(`${file}: dtype ${descr} not handled`);
  return { data: new T(copy.buffer), shape };
}

// max |y - ref| and max |ref| (the report gives both, and their ratio)
export function maxAbsErr(y, ref) {
  if (!y || y.length !== ref.length) return { err: null, ref_max: null };
  let e = 0, m = 0;
  for (let i = 0; i < y.length; i++) {
    e = Math.max(e, Math.abs(y[i] - ref[i]));
    m = Math.max(m, Math.abs(ref[i]));
  }
  return { err: e, ref_max: m };
}

// The version of an installed npm package (bench/node_modules).
export function pkgVersion(name) {
  const dir = new URL('../node_modules/', import.meta.url);
  return JSON.parse(fs.readFileSync(new URL(`${name}/package.json`, dir), 'utf8')).version;
}

export function parseArgs(argv) {
  const o = { quick: false, threads: 1, maxS: 20, only: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') o.quick = true;
    else if (a === '--threads') o.threads = Number(argv[++i]);
    else if (a === '--max-s') o.maxS = Number(argv[++i]);
    else if (a === '--dir') o.dir = argv[++i];
    else if (a === '--only') o.only = argv[++i].split(',');
    else if (a === '--backend') o.backend = argv[++i];
    else if (a === '--workloads') o.workloads = argv[++i].split(',');
    else if (a === '--train-workloads') o.trainWorkloads = argv[++i].split(',');
    else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

// Times fn() (sync or async) and returns the statistics in milliseconds.
export async function measure(fn, { quick = false, maxS = 20 } = {}) {
  const warmS = quick ? 0 : 1.0, minS = quick ? 0 : 1.5, warmRuns = quick ? 1 : 5, minRuns = quick ? 3 : 30;
  const maxRuns = 2000, capMs = maxS * 1000;
  let w = 0;
  const t0 = performance.now();
  while ((w < warmRuns || performance.now() - t0 < warmS * 1000) && !(w >= 1 && performance.now() - t0 >= capMs)) {
    await fn();
    w++;
  }
  const t = [];
  const start = performance.now();
  while (t.length < maxRuns && (t.length < minRuns || performance.now() - start < minS * 1000) &&
         !(t.length >= 5 && performance.now() - start >= capMs)) {
    const a = performance.now();
    await fn();
    t.push(performance.now() - a);
  }
  const sum = t.reduce((x, y) => x + y, 0);
  t.sort((x, y) => x - y);
  const n = t.length;
  const median = n % 2 ? t[(n - 1) / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  return { median_ms: median, min_ms: t[0], max_ms: t[n - 1], mean_ms: sum / n, runs: n, warmup_runs: w };
}

// One JSON line per measurement on stdout (bench/run.py collects them).
export function emit(rec) {
  process.stdout.write(`RESULT ${JSON.stringify(rec)}\n`);
}

export const WORKLOADS = {
  mlp_b1: 'mlp', mlp_b64: 'mlp', cnn_b1: 'cnn', cnn_b32: 'cnn', mobilenet_v2_b1: 'mobilenet_v2',
  mobilenet_v3_small_b1: 'mobilenet_v3_small', lraspp_b1: 'lraspp_mobilenet_v3_large', transformer_b1: 'transformer',
  mlp_int8_b64: 'mlp_qdq', // issue 24: bench/qdq_model.py's QDQ int8 MLP
  mobilenet_v2_int8_b1: 'mobilenet_v2_qdq', // issue 24: mobilenet_v2 by `lithe quantize` + `convert --to-onnx` (run.py)
};
