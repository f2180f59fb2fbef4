// npm install lithe-wasm; then: node quickstart.mjs model.lithe
import fs from 'node:fs';
import * as lithe from 'lithe-wasm';

const info = await lithe.init();                             // threads, SIMD128 where there
const model = await lithe.load(process.argv[2] ?? 'model.lithe'); // .lithe (Thinc, lithe) or .onnx
const x = lithe.tensor(new Float32Array(2 * 784).fill(0.5), [2, 784]);
console.log('classes', model.predict(x).argmax());          // Int32Array(2)

const optimizer = lithe.adam({ learnRate: 0.001 });           // Thinc's Adam
const loss = model.trainStep({ x, y: [3, 7], optimizer });    // cross-entropy before the step
console.log(`${info.build} build, ${info.threads} thread(s), loss ${loss.toFixed(4)}`);
fs.writeFileSync('tuned.lithe', model.save());

try {
  await lithe.load('missing.lithe');
} catch (e) {
  console.log(e instanceof lithe.LitheError, e.statusName);  // true LITHE_ERR_IO
}
model.dispose();
optimizer.dispose();
