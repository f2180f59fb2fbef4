// The importer module's calls into the core (issue 29, docs/wasm.md "The npm package against the
// WASI build"): a core function that takes or returns a v128 is a per-vector helper, and a call
// across the two modules per vector is one V8 never inlines and spills the caller's vectors around
// (the SIMD128 direct convolution's HardSwish was one: mobilenet_v3_small at 0.65x of the WASI build
// of the same C). So the SIMD importer modules import no function with a v128 in its signature; the
// read is of the .wasm's own type and import sections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pkgDir } from './fixtures.mjs';

function leb(buf, at) {
  let v = 0, shift = 0, b;
  do {
    b = buf[at.i++];
    v += (b & 0x7f) * 2 ** shift;
    shift += 7;
  } while (b & 0x80);
  return v;
}

// [{ module, name, params, results }] of the function imports (value types as bytes; 0x7b: v128)
export function functionImports(bytes) {
  const buf = new Uint8Array(bytes), at = { i: 8 }, types = [], out = [];
  const name = () => { const n = leb(buf, at); const s = Buffer.from(buf.subarray(at.i, at.i + n)).toString(); at.i += n; return s; };
  while (at.i < buf.length) {
    const id = buf[at.i++], size = leb(buf, at), end = at.i + size;
    if (id === 1) {
      for (let n = leb(buf, at); n > 0; n--) {
        assert.equal(buf[at.i++], 0x60, 'a function type');
        const params = [...buf.subarray(at.i + 1, at.i + 1 + buf[at.i])]; at.i += 1 + params.length;
        const results = [...buf.subarray(at.i + 1, at.i + 1 + buf[at.i])]; at.i += 1 + results.length;
        types.push({ params, results });
      }
    } else if (id === 2) {
      for (let n = leb(buf, at); n > 0; n--) {
        const module = name(), field = name(), kind = buf[at.i++];
        if (kind === 0) out.push({ module, name: field, ...types[leb(buf, at)] });
        else if (kind === 1) { at.i++; const f = buf[at.i++]; leb(buf, at); if (f & 1) leb(buf, at); } // table
        else if (kind === 2) { const f = buf[at.i++]; leb(buf, at); if (f & 1) leb(buf, at); } // memory
        else if (kind === 3) at.i += 2; // global: type, mutability
        else assert.fail(`import kind ${kind}`);
      }
    }
    at.i = end;
  }
  return out;
}

for (const file of ['lithe-importers-simd.wasm', 'lithe-importers-relaxed-simd.wasm']) {
  test(`${file} imports no per-vector (v128) function from the core`, () => {
    const imports = functionImports(fs.readFileSync(path.join(pkgDir, 'dist', file)));
    const vec = imports.filter((f) => [...f.params, ...f.results].includes(0x7b)).map((f) => `${f.module}.${f.name}`);
    assert.deepEqual(vec, [], `v128 imports: ${vec.join(', ')}`);
  });
}

// ...and the HardSwish those stores apply (test/hswish_golden.py: torch the oracle), through the
// direct convolution's chunks and the GEMM tiles of the SIMD128 core.
test('convolutions with HardSwish in the SIMD128 core: torch within 1e-5', async () => {
  const { spawnSync } = await import('node:child_process');
  const os = await import('node:os');
  const lithe = await import('../src/index.js');
  const { npyRead, maxAbsDiff } = await import('./fixtures.mjs');
  await lithe.init();
  assert.ok(lithe.usingSimd(), 'the SIMD128 core');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lithe-js-hs-'));
  try {
    const r = spawnSync('/usr/bin/python3', [path.join(pkgDir, 'test/hswish_golden.py'), work], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const x = npyRead(path.join(work, 'hs_x.npy')), golden = npyRead(path.join(work, 'hs_y.npy'));
    const model = await lithe.load(path.join(work, 'hs.onnx'));
    try {
      const y = model.predict(x.data, x.shape);
      assert.deepEqual(y.shape, golden.shape);
      const worst = maxAbsDiff(y.data, golden.data);
      assert.ok(worst <= 1e-5, `largest difference from torch: ${worst}`);
    } finally {
      model.dispose();
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
});
