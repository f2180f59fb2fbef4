// lithe in a browser page, through a bundler (Vite, webpack 5 or esbuild: the configs beside this
// file). The README's browser quickstart is this file; test.mjs builds it with each bundler from the
// packed package and runs the bundles in Chromium.
import * as lithe from 'lithe-wasm';

async function main() {
  const info = await lithe.init();                         // SIMD128 build where the browser has it
  const model = await lithe.load('/model.lithe');          // a .lithe (or .onnx) file, fetched
  const x = new Float32Array(await (await fetch('/x.bin')).arrayBuffer());
  const y = model.predict(x, [x.length / 784, 784]);       // 28x28 images -> class scores
  document.querySelector('#out').textContent = `classes: ${y.argmax().join(' ')}`;

  // ONNX and TF.js models run code from a second .wasm, fetched the first time one loads
  const tfjs = await lithe.load({
    modelJson: { modelTopology: { class_name: 'Sequential', config: { name: 's', layers: [
      { class_name: 'Dense', config: { name: 'd', units: 2, use_bias: false, batch_input_shape: [null, 3] } }] } },
    weightsManifest: [{ paths: ['w.bin'], weights: [{ name: 'd/kernel', shape: [3, 2], dtype: 'float32' }] }] },
    weights: new Float32Array([1, 0, 0, 1, 1, 1]).buffer,
  });
  const z = tfjs.predict(new Float32Array([1, 2, 3]), [1, 3]);
  return { build: info.build, y: Array.from(y.data), tfjs: Array.from(z.data) };
}

main().then((result) => (window.RESULT = result), (e) => (window.RESULT = { error: String(e?.stack ?? e) }));
