// issue 29: the npm package against the WASI build of the same C, paired in ONE Node process: per round
// node:wasi instance of `lithe.wasm bench` (R timed runs after 3, timed inside the module, its input the
// workload's x.npy) and R of the package's model.predict(x).data (performance.now(), the copies in
// and out included), alternating which goes first. Prints each side's min and median over the
// rounds and the median (range) of the per-round WASI median / npm median (bench/run.py's bar: >= 0.95).
//   node --single-threaded-gc --expose-gc bench/npmwasi/pair.mjs bindings/js/dist build/wasi/tools/lithe/lithe.wasm BENCH_DIR ROUNDS RUNS wl1,wl2
import fs from 'node:fs'; import path from 'node:path'; import os from 'node:os';
import { WASI } from 'node:wasi';
const [dist, wasiPath, dir, roundsS, runsS, wls, pkgSrc] = process.argv.slice(2);
const lithe = await import(pkgSrc ?? new URL('../../bindings/js/src/index.js', import.meta.url).href);
const { npyRead } = await import(new URL('../runners/common.mjs', import.meta.url).href);
process.removeAllListeners('warning'); process.on('warning', () => {});
const WL = { mlp_b1: 'mlp', mlp_b64: 'mlp', cnn_b1: 'cnn', cnn_b32: 'cnn', mobilenet_v2_b1: 'mobilenet_v2',
  mobilenet_v3_small_b1: 'mobilenet_v3_small', lraspp_b1: 'lraspp_mobilenet_v3_large', transformer_b1: 'transformer',
  mlp_int8_b64: 'mlp_qdq', mobilenet_v2_int8_b1: 'mobilenet_v2_qdq' };
await lithe.init({ wasm: fs.readFileSync(path.join(dist, 'lithe-simd.wasm')), simd: true, threads: 1,
  importers: fs.readFileSync(path.join(dist, 'lithe-importers-simd.wasm')), relaxed: false });
const wmod = await WebAssembly.compile(fs.readFileSync(wasiPath));
const R = +runsS, rounds = +roundsS;
const med = a => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
function wasiBench(file, xfile) {
  const out = path.join(os.tmpdir(), `pair_${process.pid}.txt`);
  const fd = fs.openSync(out, 'w');
  const wasi = new WASI({ version: 'preview1', args: ['lithe', 'bench', file, '--input', xfile, '--warmup-runs', '3', '--warmup-s', '0',
    '--min-runs', String(R), '--max-runs', String(R), '--min-s', '0'], env: { LITHE_NO_MMAP: '1' },
    preopens: { '/': '/' }, stdout: fd, returnOnExit: true });
  const inst = new WebAssembly.Instance(wmod, wasi.getImportObject());
  wasi.start(inst); fs.closeSync(fd);
  globalThis.gc?.(); // (--expose-gc: each instance's memory reservation freed before the next; without it
  // node crashed (SIGSEGV) by the third mobilenet round on this host)
  const t = fs.readFileSync(out, 'utf8');
  const g = k => +(t.match(new RegExp(`${k}=([0-9.]+)`)) || [])[1];
  return { min: g('min_ms'), med: g('median_ms') };
}
for (const wl of wls.split(',')) {
  const file = path.resolve(dir, `${WL[wl]}.onnx`), xfile = path.resolve(dir, `${wl}_x.npy`);
  const model = lithe.loadBytes(fs.readFileSync(file));
  const x = npyRead(xfile); const xt = lithe.tensor(x.data, x.shape);
  const npm = () => { for (let i = 0; i < 3; i++) model.predict(xt).data; const t = [];
    for (let i = 0; i < R; i++) { const t0 = performance.now(); model.predict(xt).data; t.push(performance.now() - t0); }
    return { min: Math.min(...t), med: med(t) }; };
  const rs = [];
  for (let r = 0; r < rounds; r++) {
    let a, b;
    if (r & 1) { b = npm(); a = wasiBench(file, xfile); } else { a = wasiBench(file, xfile); b = npm(); }
    rs.push({ w: a, n: b });
  }
  const ratioMed = med(rs.map(q => q.w.med / q.n.med)), ratioMin = Math.min(...rs.map(q => q.w.min)) / Math.min(...rs.map(q => q.n.min));
  const lo = Math.min(...rs.map(q => q.w.med / q.n.med)), hi = Math.max(...rs.map(q => q.w.med / q.n.med));
  console.log(`${wl.padEnd(22)} WASI min ${Math.min(...rs.map(q => q.w.min)).toFixed(3)} med ${med(rs.map(q=>q.w.med)).toFixed(3)} | npm min ${Math.min(...rs.map(q => q.n.min)).toFixed(3)} med ${med(rs.map(q=>q.n.med)).toFixed(3)} | WASI/npm med-of-round-ratios ${ratioMed.toFixed(3)} (${lo.toFixed(2)}-${hi.toFixed(2)}) min-ratio ${ratioMin.toFixed(3)}`);
  model.dispose();
}
