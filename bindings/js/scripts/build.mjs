// `npm run build`: builds the core .wasm files with CMake + Emscripten (presets wasm-simd,
// wasm-threads, wasm-scalar and wasm-relaxed at the repository root) and copies them into dist/,
// where the package loads them, with the importer module each one-thread core links, and the
// WebGPU module (preset wasm-webgpu).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const root = path.resolve(pkg, '../..');
const jobs = process.env.LITHE_JOBS ?? '2';
// Debian's emscripten 3.1.6 needs its node modules on NODE_PATH.
const env = { ...process.env, NODE_PATH: [process.env.NODE_PATH, '/usr/share/nodejs'].filter(Boolean).join(':') };

function run(args) {
  console.log(`$ ${args.join(' ')}`);
  const r = spawnSync(args[0], args.slice(1), { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], env });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

fs.mkdirSync(path.join(pkg, 'dist'), { recursive: true });
for (const flavour of ['simd', 'threads', 'scalar', 'relaxed']) {
  run(['cmake', '--preset', `wasm-${flavour}`]);
  run(['cmake', '--build', '--preset', `wasm-${flavour}`, '-j', jobs]);
  const name = { threads: 'lithe-simd-threads', relaxed: 'lithe-relaxed-simd' }[flavour] ?? `lithe-${flavour}`;
  const built = path.join(root, 'build', `wasm-${flavour}`, 'bindings', 'js', `${name}.wasm`);
  fs.copyFileSync(built, path.join(pkg, 'dist', `${name}.wasm`));
  console.log(`dist/${name}.wasm: ${fs.statSync(built).size} bytes`);
}
// The WebGPU module (the SIMD128 core with backends/webgpu and the importers built in), loaded only
// by init({ device: 'webgpu' }); its build also makes the conformance module tests/webgpu runs.
run(['cmake', '--preset', 'wasm-webgpu']);
run(['cmake', '--build', '--preset', 'wasm-webgpu', '-j', jobs]);
{
  const built = path.join(root, 'build', 'wasm-webgpu', 'bindings', 'js', 'lithe-webgpu.wasm');
  fs.copyFileSync(built, path.join(pkg, 'dist', 'lithe-webgpu.wasm'));
  console.log(`dist/lithe-webgpu.wasm: ${fs.statSync(built).size} bytes`);
}
// The importer module (ONNX, TF.js, the graph executor and its convolutions), one per core build.
for (const [flavour, name] of [['simd', 'lithe-importers-simd'], ['scalar', 'lithe-importers'], ['relaxed', 'lithe-importers-relaxed-simd']]) {
  const built = path.join(root, 'build', `wasm-${flavour}`, 'bindings', 'js', `${name}.wasm`);
  fs.copyFileSync(built, path.join(pkg, 'dist', `${name}.wasm`));
  console.log(`dist/${name}.wasm: ${fs.statSync(built).size} bytes`);
}
