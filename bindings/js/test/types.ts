// Compiled by pack.test.mjs with tsc --strict: the declarations describe the package as used.
import * as lithe from '../src/index.js';
import { LitheError, type Tensor } from '../src/index.js';

async function main(bytes: Uint8Array): Promise<number> {
  const info: lithe.InitInfo = await lithe.init({ simd: lithe.simdSupported(), relaxed: lithe.relaxedSimdSupported(), threads: lithe.threadsSupported() ? 2 : 1 });
  const build: 'simd-threads' | 'relaxed-simd' | 'simd' | 'scalar' = info.build;
  const nThreads: number = info.threads + lithe.threads() + build.length;
  const model: lithe.Model = await lithe.load(bytes);
  const x = lithe.tensor(new Float32Array(784 * 2), [2, 784]);
  const y: Tensor<Float32Array> = model.predict(x);
  const classes: Int32Array = y.argmax();
  const opt = lithe.adam({ learnRate: 1e-3 });
  const loss: number = model.trainStep({ x, y: lithe.tensor(Int32Array.from([0, 1]), [2]), loss: 'categorical_crossentropy', optimizer: opt });
  model.setSeed(0).resizeOutput(11);
  const saved: Uint8Array = model.save({ optimizer: opt });
  try {
    lithe.loadBytes(saved.subarray(0, 10));
  } catch (e) {
    if (e instanceof LitheError) console.log(e.statusName, e.detail, e.status === lithe.STATUS.FORMAT);
  }
  const raw = lithe.c();
  const status: number = raw.lithe_model_n_layers(0);
  model.dispose();
  opt.dispose();
  return loss + classes[0] + status + (info.simd ? 1 : 0) + nThreads;
}
void main;
