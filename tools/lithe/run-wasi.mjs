#!/usr/bin/env node
// Runs a WASI command module (lithe.wasm from the `wasi` preset) under Node's node:wasi:
//   node tools/lithe/run-wasi.mjs build/wasi/tools/lithe/lithe.wasm info model.lithe
// The working directory is preopened as "." so relative paths work as they do natively. So that
// absolute paths work too, each top-level directory of / is preopened under its own name
// (wasi-libc picks the preopen with the longest matching prefix; "/" itself would tie with "."
// and take relative paths away from it). "../" above the working directory is outside the
// sandbox. LITHE_WASI_DIRS=a:b:c preopens only those directories ("." included if listed);
// paths outside them fail with lithe's own "cannot open" error — a sandbox refuses, it does not
// trap. The exit status is the module's.
import { readFile } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { WASI } from 'node:wasi';
import process from 'node:process';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

// Node 20's V8 (11.3) now and then corrupts its own heap when a parallel GC evacuation runs while
// a WASI module's memory grows (a fatal "Unknown type" in EvacuateNewSpaceVisitor, seen here with
// lithe.wasm train-mnist in most runs); with a single-threaded GC it never did in ours. The flag
// must be given at start-up (v8.setFlagsFromString is too late), so the script re-runs itself.
if (!process.execArgv.includes('--single-threaded-gc') && process.env.LITHE_WASI_GC !== 'parallel') {
  const r = spawnSync(process.execPath, ['--single-threaded-gc', ...process.execArgv, ...process.argv.slice(1)],
                      { stdio: 'inherit' });
  process.exit(r.status ?? 134);
}

const [wasmPath, ...args] = process.argv.slice(2);
if (!wasmPath) {
  process.stderr.write('usage: node run-wasi.mjs MODULE.wasm [ARGS...]\n');
  process.exit(2);
}

const preopens = {};
if (process.env.LITHE_WASI_DIRS) {
  for (const d of process.env.LITHE_WASI_DIRS.split(':').filter(Boolean)) preopens[d] = path.resolve(d);
} else {
  for (const d of readdirSync('/', { withFileTypes: true }))
    if (d.isDirectory() && !['proc', 'sys', 'dev'].includes(d.name)) preopens[`/${d.name}`] = `/${d.name}`;
  preopens['.'] = process.cwd(); // last: it wins ties, and relative paths tie with everything
}

// node:wasi prints an ExperimentalWarning once; it says nothing about the module's run.
process.removeAllListeners('warning');
process.on('warning', (w) => { if (w.name !== 'ExperimentalWarning') process.stderr.write(`${w}\n`); });

const wasi = new WASI({
  version: 'preview1',
  args: [path.basename(wasmPath, '.wasm'), ...args],
  // the graph layer's switches (LITHE_GRAPH_PROFILE, LITHE_GRAPH_FUSE: docs/onnx.md) pass through
  env: { LITHE_NO_MMAP: '1', ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('LITHE_GRAPH_'))) },
  preopens,
  returnOnExit: true,
});
let bytes;
try {
  bytes = await readFile(wasmPath);
} catch (e) {
  process.stderr.write(`run-wasi: cannot read ${wasmPath}: ${e.message}\n`);
  process.exit(2);
}
const module = await WebAssembly.compile(bytes);
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
let code;
try {
  code = wasi.start(instance);
} catch (e) {
  // A trap (unreachable, out of bounds) is a bug in the module: say so and fail loudly.
  process.stderr.write(`run-wasi: the module trapped: ${e && e.stack ? e.stack : e}\n`);
  code = 134;
}
process.exitCode = code;
