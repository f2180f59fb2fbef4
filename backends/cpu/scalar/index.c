/* Placeholder: gather / scatter-add / hash kernels arrive with the dense-catalogue kernels. */
#include "../kernels.h"
void lithe_f32_gather_rows__scalar(int64_t B, int64_t N, const float *table, const int32_t *ids32,
                                   const uint64_t *ids64, float *Y) {
    (void)B; (void)N; (void)table; (void)ids32; (void)ids64; (void)Y;
}
void lithe_f32_scatter_add_rows__scalar(int64_t B, int64_t N, float *table, const int32_t *ids32,
                                        const uint64_t *ids64, const float *X) {
    (void)B; (void)N; (void)table; (void)ids32; (void)ids64; (void)X;
}
void lithe_u64_hash_ids__scalar(int64_t B, const uint64_t *ids, uint32_t seed, uint32_t *out) {
    (void)B; (void)ids; (void)seed; (void)out;
}
