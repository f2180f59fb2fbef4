#version 450
// Row gather and scatter-add by ids (int32 when u2 = 0; int64/uint64 as two words when u2 = 1,
// of which the low word indexes: tables have fewer than 2^32 rows). u0 = B, u1 = N.
//   spec 0 = 0: gather_rows       Y[i, :] = table[ids[i], :]   (0 = Y, 1 = table, 2 = ids)
//   spec 0 = 1: scatter_add_rows  table[ids[i], :] += X[i, :]  (0 = table, 1 = X, 2 = ids);
//               one invocation per column walking i in order, so duplicate ids accumulate in
//               the CPU's order (the same bits) without atomics.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer Ob { float o[]; };
layout(std430, binding = 1) readonly buffer Ib { float inp[]; };
layout(std430, binding = 2) readonly buffer Idb { uint ids[]; };
uint row_id(uint i) { return pc.u[2] != 0u ? ids[OFF(2) + 2u * i] : ids[OFF(2) + i]; }
void main() {
    uint B = pc.u[0], N = pc.u[1];
    if (OP == 0u) {
        for (uint e = FIRST; e < B * N; e += STRIDE) {
            uint i = e / N, j = e % N;
            o[OFF(0) + e] = inp[OFF(1) + row_id(i) * N + j];
        }
    } else {
        for (uint j = FIRST; j < N; j += STRIDE)
            for (uint i = 0u; i < B; i++) o[OFF(0) + row_id(i) * N + j] += inp[OFF(1) + i * N + j];
    }
}
