// The device-conformance cases on WebGPU (tests/device/cases.h, the list test_vulkan and test_cuda
// run too): lithe-webgpu-test.wasm exports them one family at a time (wgt_family), each case
// against the CPU backend from the same seed. Dawn's Node bindings (npm's webgpu) over SwiftShader,
// as webgpu.test.mjs; without an adapter the tests skip unless LITHE_REQUIRE_WEBGPU is set (not 0).
// A case added to cases.h runs here with no change to this file.
//   LITHE_WEBGPU_FAMILY: run only that family (a name: memory, elementwise, ...)
import test from 'node:test';
import assert from 'node:assert/strict';
import { adapterTest, device, load, skip } from './harness.mjs';

adapterTest('for the shared cases');

// the families' names, from a module instance without a device (it needs none to list them)
const families = [];
{
  const m = await load(null);
  const ex = m.instance.exports;
  for (let f = 0; ; f++) {
    const p = ex.wgt_family_name(f);
    if (!p) break;
    const bytes = new Uint8Array(ex.memory.buffer, p, 64);
    families.push(new TextDecoder().decode(bytes.slice(0, bytes.indexOf(0))));
  }
}

test('the module lists the case families', () => assert.ok(families.length >= 7, `families: ${families}`));

const only = process.env.LITHE_WEBGPU_FAMILY;
families.forEach((name, f) => {
  test(`the ${name} cases match the CPU backend`, { skip: skip || (only && only !== name ? `LITHE_WEBGPU_FAMILY=${only}` : false) }, async () => {
    const m = await load(device);
    const fails = await m.call('wgt_family', f);
    const out = m.out.join('\n');
    console.log((out.match(/family [^\n]*/g) ?? []).join('\n'));
    assert.equal(fails, 0, out);
    assert.deepEqual(m.wg.errors, [], 'WebGPU validation errors');
    console.log(`${name}: ${m.wg.stats.dispatches} dispatches, ${m.wg.stats.submits} submits, ${m.wg.stats.pipelines} pipelines`);
  });
});
