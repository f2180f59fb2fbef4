/* The device-conformance cases: every one runs on Vulkan and CUDA (tests/device/test_device.c, one
 * cmocka test each) and on WebGPU (tests/webgpu/test_webgpu.c, one export per family, called by
 * tests/webgpu/cases.test.mjs), against the CPU backend. Adding a case is one line here (its
 * family, its name) and its `void dc_<name>(void)` in tests/device/cases_<family>.c (devt.h). */
#ifndef LITHE_TESTS_DEVICE_CASES_H
#define LITHE_TESTS_DEVICE_CASES_H

#include "devt.h"

#define DEVT_CASES(X)                                                                                             \
    X(memory, fill_copy_views)                                                                                    \
    X(memory, cast)                                                                                               \
    X(elementwise, rows_elementwise)                                                                              \
    X(elementwise, rows_softmax_cce)                                                                              \
    X(elementwise, softmax)                                                                                       \
    X(elementwise, activations)                                                                                   \
    X(elementwise, unary_log_softmax)                                                                             \
    X(elementwise, broadcasting)                                                                                  \
    X(train, dropout)                                                                                             \
    X(train, adam_radam_fused)                                                                                    \
    X(train, optimizer_steps)                                                                                     \
    X(train, cce_labels)                                                                                          \
    X(train, maxout)                                                                                              \
    X(train, layernorm)                                                                                           \
    X(gemm, gemm)                                                                                                 \
    X(gemm, gemm_bias_act)                                                                                        \
    X(gemm, gemm_q8)                                                                                              \
    X(seq, ids)                                                                                                   \
    X(seq, seq_sparse_strings)                                                                                    \
    X(seq, reductions)                                                                                            \
    X(nn, lstm)                                                                                                   \
    X(nn, para_attention)                                                                                         \
    X(nn, cauchy_similarity)                                                                                      \
    X(nn, conv2d)                                                                                                 \
    X(nn, pool2d)                                                                                                 \
    X(models, model_relu_mlp_dropout)                                                                             \
    X(models, model_maxout_layernorm_dropout)                                                                     \
    X(models, model_hash_embed_tagger)                                                                            \
    X(models, model_mlp)                                                                                          \
    X(models, model_text)                                                                                         \
    X(models, model_bilstm)                                                                                       \
    X(models, model_attention)                                                                                    \
    X(models, model_sparse)                                                                                       \
    X(models, model_siamese)

/* the families, in the order the list first names them (the WebGPU module's exports) */
#define DEVT_FAMILIES(X) X(memory) X(elementwise) X(train) X(gemm) X(seq) X(nn) X(models)

#define DEVT_DECLARE(family, name) void dc_##name(void);
DEVT_CASES(DEVT_DECLARE)
#undef DEVT_DECLARE

typedef struct devt_case {
    const char *family, *name;
    void (*fn)(void);
} devt_case;
extern const devt_case devt_cases[]; /* DEVT_CASES in order */
extern const size_t devt_n_cases;

/* Relu(h1) >> Relu(h2, dropout) >> Softmax(10): the MLP the model cases and WebGPU's step counts use */
lithe_status dc_build_mlp(int64_t h1, int64_t h2, float dropout, lithe_model **out);

/* the shared input sizes: around the 256-wide workgroups and beyond one grid-stride pass */
extern const int64_t devt_sizes[7]; /* {1, 3, 255, 256, 257, 1000, 4099} */
#define sizes devt_sizes
#define N_SIZES ((size_t)7)

#endif
