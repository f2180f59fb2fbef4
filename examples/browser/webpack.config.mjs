// webpack 5: nothing to copy by hand; asset modules emit the .wasm files that the loader names with
// new URL('../dist/….wasm', import.meta.url), and its worker script (the threads build).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export default {
  mode: 'production',
  target: 'web',
  entry: './main.js',
  output: { path: path.join(here, 'out-webpack'), filename: 'bundle.js', assetModuleFilename: '[name]-[contenthash:8][ext]', clean: true },
  performance: { hints: false }, // (the .wasm files are over webpack's 244 KiB advice)
};
