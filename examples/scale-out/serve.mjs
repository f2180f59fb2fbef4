// Serves a model lithe exported, with onnxruntime-node (npm install onnxruntime-node):
//   node serve.mjs tuned.onnx batch.json
// Prints each row's class; with lithe's own predictions in the batch ("lithe"), checks that
// onnxruntime agrees with them (within 1e-5 of the output's scale).
import fs from 'node:fs';
import ort from 'onnxruntime-node';

const [modelPath, batchPath] = process.argv.slice(2);
const batch = JSON.parse(fs.readFileSync(batchPath, 'utf8'));
const session = await ort.InferenceSession.create(modelPath);
const x = new ort.Tensor('float32', Float32Array.from(batch.x), batch.shape);
const { Y } = await session.run({ X: x }); // a native lithe tree exports input "X", output "Y"
const [rows, cols] = Y.dims;
const classes = [];
for (let r = 0; r < rows; r++) {
  const row = Array.from(Y.data.subarray(r * cols, (r + 1) * cols));
  classes.push(row.indexOf(Math.max(...row)));
}
console.log(`classes: ${classes.join(' ')}`);
if (batch.lithe) {
  let diff = 0, scale = 0;
  batch.lithe.forEach((v, i) => {
    diff = Math.max(diff, Math.abs(v - Y.data[i]));
    scale = Math.max(scale, Math.abs(Y.data[i]));
  });
  console.log(`max |onnxruntime - lithe| = ${diff.toExponential(2)}`);
  if (!(diff <= 1e-5 * scale)) process.exit(1);
}
