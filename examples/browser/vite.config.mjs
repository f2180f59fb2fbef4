// Vite: nothing to copy by hand. `vite build` emits the package's .wasm files from the loader's
// new URL('../dist/….wasm', import.meta.url); `vite` (the dev server) needs lithe-wasm left out of
// its dependency pre-bundling, which would move the loader away from its .wasm files.
export default {
  base: './',
  optimizeDeps: { exclude: ['lithe-wasm'] },
  build: { outDir: 'out-vite', emptyOutDir: true },
};
