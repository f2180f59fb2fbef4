// The WebGPU backend's imported-graph primitives and whole ONNX graphs in Node, on Dawn's Node
// bindings (npm's `webgpu`) over SwiftShader, as webgpu.test.mjs: lithe-webgpu-test.wasm's
// tests/webgpu/test_webgpu_graph.c (the graphs' primitives are shared cases: cases.test.mjs):
// torchvision's squeezenet1_1
// and a transformer encoder (tests/webgpu/gen_graphs.py, run with Debian's /usr/bin/python3: torch
// 1.13) predicting and taking Adam steps on WebGPU against the same graphs on the CPU, with the
// dispatches, submits and time of a step. Without an adapter the tests skip, saying why, unless
// LITHE_REQUIRE_WEBGPU is set (not to 0), as test.sh does: then they fail.
//   LITHE_WEBGPU_TEST_WASM: the module (default build/wasm-webgpu/bindings/js/lithe-webgpu-test.wasm)
//   LITHE_WEBGPU_GRAPHS: a folder for the generated .onnx files (default: a fresh temporary one)
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { adapterTest, device, load, skip } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

adapterTest('for the graph tests');

// The graphs: exported once per run by torch (gen_graphs.py).
function graphs() {
  const dir = process.env.LITHE_WEBGPU_GRAPHS ?? fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-webgpu-graphs-'));
  if (!fs.existsSync(path.join(dir, 'transformer.onnx'))) {
    const r = spawnSync('/usr/bin/python3', [path.join(here, 'gen_graphs.py'), dir], { encoding: 'utf8' });
    assert.equal(r.status, 0, `gen_graphs.py: ${r.stderr}`);
  }
  return dir;
}

// name, input shape, learn rate, tolerances: predictions, params after the steps
const cases = [
  ['squeezenet', [1, 3, 64, 64], 1e-3, [1e-4, 1e-3], [2e-5, 1e-3]],
  ['transformer', [2, 8, 32], 1e-3, [1e-4, 1e-3], [2e-5, 1e-3]],
];
const STEPS = 3;

for (const [name, shape, lr, ptol, wtol] of cases) {
  test(`the ${name} ONNX graph predicts and takes ${STEPS} Adam steps on WebGPU as on the CPU`, { skip }, async () => {
    const dir = graphs();
    const bytes = fs.readFileSync(path.join(dir, `${name}.onnx`));
    const m = await load(device);
    const ex = m.instance.exports;
    const p = ex.malloc(bytes.length), sp = ex.malloc(4 * shape.length), np = ex.malloc(4);
    new Uint8Array(ex.memory.buffer).set(bytes, p);
    new Int32Array(ex.memory.buffer, sp, shape.length).set(shape);
    const msg = () => m.out.join('\n');
    assert.equal(await m.call('wgt_graph_load', p, bytes.length, shape.length, sp, lr), 0, msg());
    assert.equal(await m.call('wgt_graph_predict', ...ptol), 0, msg());
    assert.equal(await m.call('wgt_graph_steps', STEPS, 3), 0, msg());
    assert.equal(await m.call('wgt_graph_predict', ptol[0] * 10, ptol[1] * 10), 0, msg());
    assert.equal(await m.call('wgt_graph_params', ...wtol, np), 0, msg());
    const nparams = new Int32Array(ex.memory.buffer, np, 1)[0];
    assert.ok(nparams > 10, `${nparams} params compared`);
    // the cost of a step on WebGPU alone, warm (pipelines compiled, the pool filled)
    assert.equal(await m.call('wgt_graph_steps', 1, 2), 0, msg());
    assert.equal(await m.call('wgt_graph_sync'), 0, msg());
    m.wg.byShader.clear();
    const s0 = { ...m.wg.stats }, t0 = performance.now(), timed = 2;
    assert.equal(await m.call('wgt_graph_steps', timed, 2), 0, msg());
    assert.equal(await m.call('wgt_graph_sync'), 0, msg()); // the steps' work done (one fill and read-back more)
    const ms = (performance.now() - t0) / timed, per = (k) => (m.wg.stats[k] - s0[k]) / timed;
    console.log(`${name} ${shape.join('x')}: ${nparams} params within (${wtol}) after ${STEPS} Adam steps; a step on WebGPU: ` +
                `${per('dispatches')} dispatches, ${per('submits')} submits, ${per('readbacks')} read-backs, ` +
                `${per('uploads')} uploads, ${per('copies')} copies, ${per('pipelines')} new pipelines, ` +
                `${per('buffers')} new buffers; ${ms.toFixed(0)} ms on SwiftShader`);
    console.log(`  by (shader, OP) per step: ${[...m.wg.byShader].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}=${v / timed}`).join(' ')}`);
    assert.equal(per('pipelines'), 0, 'a repeated step compiles nothing');
    ex.wgt_graph_free();
    assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
  });
}
