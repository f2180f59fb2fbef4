// The same tests on the scalar (non-SIMD) build, which browsers without SIMD128 get.
import { suite } from './suite.mjs';
suite({ simd: false });
