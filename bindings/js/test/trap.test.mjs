// A trap is not an error lithe reports (those are statuses): it means a bug or a bad pointer given
// to the C-mirror layer. After one, the instance refuses to go on, clearly. Own process: the
// instance stays unusable afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as lithe from '../src/index.js';

test('after a trap every call fails with an error naming it', async () => {
  await lithe.init();
  const m = lithe.tensor(new Float32Array(4), [2, 2]); // still fine before
  assert.deepEqual(m.shape, [2, 2]);
  // a pointer far outside the module's memory: the access traps
  assert.throws(() => lithe.c().lithe_tensor_release(0x7ffffff0),
    (e) => e instanceof lithe.LitheError && e.statusName === 'LITHE_ERR_INTERNAL' && /trapped in lithe_tensor_release/.test(e.message) &&
      e.cause instanceof WebAssembly.RuntimeError);
  assert.ok(lithe.c().trapped instanceof WebAssembly.RuntimeError);
  assert.throws(() => lithe.adam(), (e) => e instanceof lithe.LitheError && /trapped earlier.*cannot be used/.test(e.message));
  assert.throws(() => lithe.loadBytes(new Uint8Array(8)), /trapped earlier/);
});
