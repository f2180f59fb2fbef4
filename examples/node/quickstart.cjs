// CommonJS: require('lithe-wasm') (Node's require of an ES module: Node ^20.19 or >= 22.12)
const lithe = require('lithe-wasm');

lithe.init().then(async () => {
  const model = await lithe.load(process.argv[2] ?? 'model.lithe');
  const x = lithe.tensor(new Float32Array(784).fill(0.5), [1, 784]);
  console.log('classes', model.predict(x).argmax());
  model.dispose();
});
