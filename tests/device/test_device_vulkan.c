/* The Vulkan backend's machinery, in test_vulkan (tests/device/test_device.c registers these):
 * command batching, the memory pool, the pipeline cache. White-box checks on the context's counters
 * (backends/vulkan/vulkan_internal.h): n_submits and n_dispatches (since creation), n_blocks (the
 * pool's device buffers) and n_pipes (pipelines). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cases.h"
#include "../backends/vulkan/vulkan_internal.h"

#include "devt_cmocka.h"

void test_vk_batched_submission(void **state);
void test_vk_training_step_submits_pipes_blocks(void **state);
void test_vk_pool_allocator(void **state);

/* Y = 0.75 Y + 0.5 X, then Z = X * Y, on both sides: two device dispatches. */
static void vk_two_ops(pair X, pair Y, pair Z) {
    OK(lithe__op_axpby(cpu, 0.5f, X.c, 0.75f, Y.c));
    OK(lithe__op_axpby(dev, 0.5f, X.v, 0.75f, Y.v));
    OK(lithe__op_mul(cpu, X.c, Y.c, Z.c));
    OK(lithe__op_mul(dev, X.v, Y.v, Z.v));
}

/* Dispatches are recorded into the frame's command buffer and submitted only at synchronisation
 * points: a read-back, an explicit sync, or a frame full of LITHE__VK_FRAME_DISPATCHES. */
void test_vk_batched_submission(void **state) {
    (void)state;
    if (!dev) skip();
    lithe__vk *vk = lithe__vk_of(dev);
    const int64_t n[1] = {1000};
    pair X = pair_rand(1, n, -1, 1), Y = pair_rand(1, n, -1, 1), Z = pair_rand(1, n, -1, 1);
    OK(lithe_backend_sync(dev)); /* the uploads above go out: nothing is being recorded now */
    uint64_t s0 = vk->n_submits, d0 = vk->n_dispatches;
    OK(lithe_backend_sync(dev)); /* nothing recorded: nothing to submit */
    assert_int_equal(vk->n_submits - s0, 0);
    /* a chain of 20 device ops, no read-back: recorded, not one submitted */
    for (int i = 0; i < 10; i++) vk_two_ops(X, Y, Z);
    assert_int_equal(vk->n_dispatches - d0, 20);
    assert_int_equal(vk->n_submits - s0, 0);
    /* one read-back: the whole chain goes out in exactly one submission */
    float z[1000];
    OK(lithe_tensor_read(Z.v, z, sizeof z));
    assert_int_equal(vk->n_submits - s0, 1);
    EXPECT_PAIR("20 batched ops: Z", Z, 1e-6, 1e-6);
    EXPECT_PAIR("20 batched ops: Y", Y, 1e-6, 1e-6);
    /* an explicit sync submits what was recorded since, once */
    s0 = vk->n_submits;
    vk_two_ops(X, Y, Z);
    assert_int_equal(vk->n_submits - s0, 0);
    OK(lithe_backend_sync(dev));
    assert_int_equal(vk->n_submits - s0, 1);
    /* a long chain: a frame is submitted (without waiting) each time it holds
     * LITHE__VK_FRAME_DISPATCHES and another dispatch comes, so 2 frames + 8 dispatches of
     * recording are 2 submissions, and the read-back the third */
    s0 = vk->n_submits;
    d0 = vk->n_dispatches;
    for (int i = 0; i < LITHE__VK_FRAME_DISPATCHES + 4; i++) vk_two_ops(X, Y, Z);
    assert_int_equal(vk->n_dispatches - d0, 2 * LITHE__VK_FRAME_DISPATCHES + 8);
    assert_int_equal(vk->n_submits - s0, 2);
    OK(lithe_tensor_read(Z.v, z, sizeof z));
    assert_int_equal(vk->n_submits - s0, 3);
    EXPECT_PAIR("1032 ops over three frames: Z", Z, 1e-6, 1e-6);
    EXPECT_PAIR("1032 ops over three frames: Y", Y, 1e-6, 1e-6);
    pair_free(X), pair_free(Y), pair_free(Z);
}

/* One training step of build_relu_mlp (forward, the loss and its gradient, backward, Adam with
 * Thinc's default gradient clipping) on the device. */
static void vk_train_step(lithe_model *m, lithe_value *X, lithe_value *L, lithe_optimizer *o) {
    lithe_value *G = NULL, *dv = NULL;
    lithe_backprop *bp = NULL;
    lithe_tensor *d = NULL;
    OK(lithe_model_begin_update(m, X, &G, &bp));
    OK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(G), lithe_value_get_tensor(L), &d, NULL));
    OK(lithe_value_tensor(d, &dv));
    OK(lithe_backprop_run(bp, dv, NULL));
    OK(lithe_model_finish_update(m, o));
    lithe_tensor_release(d);
    lithe_value_release(dv);
    lithe_value_release(G);
    lithe_backprop_free(bp);
}

/* A training step's submissions, and the pipeline cache and memory pool over repeated steps. */
void test_vk_training_step_submits_pipes_blocks(void **state) {
    (void)state;
    if (!dev) skip();
    lithe__vk *vk = lithe__vk_of(dev);
    enum { B = 64, NI = 37, NC = 10 };
    lithe_model *m = NULL;
    OK(dc_build_mlp(48, 32, 0.2f, &m));
    OK(lithe_model_set_seed(m, 3));
    float *x = malloc(sizeof(float) * B * NI), *onehot = calloc(B * NC, sizeof(float));
    int32_t y[B];
    assert_true(x && onehot);
    for (int i = 0; i < B * NI; i++) x[i] = (float)(uni() * 2 - 1);
    for (int i = 0; i < B; i++) onehot[i * NC + (y[i] = (int32_t)(uni() * NC))] = 1.0f;
    lithe_value *Xc = devt_value_on(cpu, LITHE_F32, 2, (int64_t[]){B, NI}, x),
                *Yc = devt_value_on(cpu, LITHE_F32, 2, (int64_t[]){B, NC}, onehot);
    OK(lithe_model_initialize(m, Xc, Yc));
    OK(lithe_model_set_backend(m, dev));
    lithe_value *X = devt_value_on(dev, LITHE_F32, 2, (int64_t[]){B, NI}, x), *L = devt_value_on(dev, LITHE_I32, 1, (int64_t[]){B}, y);
    lithe_optimizer_opts oo = lithe_adam_defaults();
    lithe_optimizer *o = NULL;
    OK(lithe_optimizer_new(&oo, &o));
    /* two warm-up steps: every pipeline the step uses is created, the pool has grown to fit */
    vk_train_step(m, X, L, o);
    vk_train_step(m, X, L, o);
    OK(lithe_backend_sync(dev));
    size_t pipes = vk->n_pipes, blocks = vk->n_blocks;
    uint64_t s0 = vk->n_submits, d0 = vk->n_dispatches;
    vk_train_step(m, X, L, o);
    uint64_t step_submits = vk->n_submits - s0, step_dispatches = vk->n_dispatches - d0;
    fprintf(stderr, "test_vulkan: one Relu MLP training step: %llu dispatches, %llu submissions\n",
            (unsigned long long)step_dispatches, (unsigned long long)step_submits);
    /* The bound, from the code: the step reads back twice, both in the loss
     * (lithe_categorical_crossentropy): any_outside's flag (guesses in [0, 1]) and the int labels'
     * host-side range check. Everything else -- forward, dropout masks, the gradient, backward,
     * the clip factor (computed on the device: vk_clip_factor) and Adam -- is recorded and goes out
     * with the next synchronisation point. A frame fills only past LITHE__VK_FRAME_DISPATCHES
     * dispatches, which this step stays far below (asserted), so none adds a submission: exactly
     * 2. A step submitting per op (or per layer) has one submission per few dispatches. */
    assert_true(step_dispatches >= 20);
    assert_true(step_dispatches < LITHE__VK_FRAME_DISPATCHES);
    assert_int_equal(step_submits, 2);
    /* the pipeline cache: repeating the step creates no pipeline; the pool: no new block */
    for (int i = 0; i < 3; i++) vk_train_step(m, X, L, o);
    OK(lithe_backend_sync(dev));
    assert_int_equal(vk->n_pipes, pipes);
    assert_int_equal(vk->n_blocks, blocks);
    lithe_optimizer_free(o);
    lithe_value_release(Xc), lithe_value_release(Yc), lithe_value_release(X), lithe_value_release(L);
    lithe_model_free(m);
    free(x);
    free(onehot);
}

/* n bytes of device memory on backend be (a float32 tensor, not zero-filled: no dispatch). */
static lithe_tensor *vk_bytes(lithe_backend *be, VkDeviceSize n) {
    lithe_tensor *t = NULL;
    OK(lithe__tensor_alloc(be, LITHE_F32, 1, (int64_t[]){(int64_t)(n / 4)}, false, &t));
    return t;
}

/* The pooled sub-allocator (vulkan_backend.c: vk_alloc / vk_free): blocks of block_size, each
 * carved first-fit by a sorted free list that coalesces on free; an allocation over half a block
 * gets a dedicated block, released when freed; pool blocks stay for reuse. */
void test_vk_pool_allocator(void **state) {
    (void)state;
    if (!dev) skip();
    /* a context of its own, on the same device chosen by its name, so the pool holds only the
     * 256-byte buffer bound to unused bindings (made at creation) */
    char sel[64];
    snprintf(sel, sizeof sel, "vulkan:%.50s", lithe__vk_of(dev)->device_name);
    lithe_backend *be = NULL;
    OK(lithe_backend_get(sel, &be));
    if (be == dev) {
        print_error("%s is the backend under test (LITHE_VULKAN_DEVICE names the device in full?): "
                    "this test needs a fresh context\n", sel);
        fail();
    }
    lithe__vk *vk = lithe__vk_of(be);
    const VkDeviceSize S = vk->block_size, al = vk->align;
    assert_int_equal(vk->n_blocks, 1);
    vk_block *b0 = vk->blocks[0];
    assert_false(b0->dedicated);
    const VkDeviceSize first = (256 + al - 1) / al * al; /* after the dummy */
    assert_int_equal(b0->n_free, 1);
    assert_int_equal(b0->free[0].off, first);
    assert_int_equal(b0->free[0].size, S - first);

    /* many small tensors: one block, laid out first-fit back to back */
    enum { N = 1000 };
    const VkDeviceSize small = 400, r = (small + al - 1) / al * al;
    static lithe_tensor *t[N];
    for (int i = 0; i < N; i++) {
        t[i] = vk_bytes(be, small);
        const lithe__vk_alloc *a = lithe__vk_mem(t[i]);
        assert_ptr_equal(a->block, b0);
        assert_int_equal(a->off, first + (VkDeviceSize)i * r);
    }
    assert_int_equal(vk->n_blocks, 1);
    /* first fit: two holes, and the next allocation of that size takes the lower one */
    lithe_tensor_release(t[7]);
    lithe_tensor_release(t[5]);
    t[5] = vk_bytes(be, small);
    assert_int_equal(lithe__vk_mem(t[5])->off, first + 5 * r);
    t[7] = vk_bytes(be, small);
    assert_int_equal(lithe__vk_mem(t[7])->off, first + 7 * r);
    /* freed in an order that joins on each side and on both (odd ones, then even): one range */
    for (int i = 1; i < N; i += 2) lithe_tensor_release(t[i]);
    assert_int_equal(b0->n_free, N / 2); /* 499 holes, the last odd one joined to the tail */
    for (int i = 0; i < N; i += 2) lithe_tensor_release(t[i]);
    assert_int_equal(vk->n_blocks, 1);
    assert_int_equal(b0->n_free, 1);
    assert_int_equal(b0->free[0].off, first);
    assert_int_equal(b0->free[0].size, S - first);

    /* so the block's whole remainder is one allocation's again: half a block (the largest pooled
     * size) and the rest fill it, with no new block */
    const VkDeviceSize half = S / 2 / al * al;
    lithe_tensor *h1 = vk_bytes(be, half), *h2 = vk_bytes(be, S - first - half);
    assert_ptr_equal(lithe__vk_mem(h1)->block, b0);
    assert_ptr_equal(lithe__vk_mem(h2)->block, b0);
    assert_int_equal(vk->n_blocks, 1);
    assert_int_equal(b0->n_free, 0);
    /* the block is full: a small tensor opens a second pool block, which stays when it is freed */
    lithe_tensor *s1 = vk_bytes(be, small);
    assert_int_equal(vk->n_blocks, 2);
    vk_block *b1 = vk->blocks[1];
    assert_false(b1->dedicated);
    assert_int_equal(b1->size, S);
    assert_ptr_equal(lithe__vk_mem(s1)->block, b1);
    lithe_tensor_release(s1);
    lithe_tensor_release(h1);
    lithe_tensor_release(h2);
    assert_int_equal(vk->n_blocks, 2);
    assert_int_equal(b0->n_free, 1);
    assert_int_equal(b1->n_free, 1);
    assert_int_equal(b1->free[0].size, S);

    /* over half a block: a dedicated block of (the aligned) size, at offset 0, released on free */
    lithe_tensor *big = vk_bytes(be, S / 2 + 4);
    const lithe__vk_alloc *ba = lithe__vk_mem(big);
    assert_int_equal(vk->n_blocks, 3);
    assert_true(ba->block->dedicated);
    assert_int_equal(ba->block->size, (S / 2 + 4 + al - 1) / al * al);
    assert_int_equal(ba->off, 0);
    /* and usable: written and read back */
    uint32_t probe[4] = {1, 2, 3, 4}, back[4] = {0};
    OK(be->ops->upload(be, big->storage->data, S / 2 - 12, probe, sizeof probe)); /* its last 16 bytes */
    OK(be->ops->download(be, back, big->storage->data, S / 2 - 12, sizeof back));
    assert_memory_equal(probe, back, sizeof probe);
    lithe_tensor_release(big);
    assert_int_equal(vk->n_blocks, 2);
    for (size_t i = 0; i < vk->n_blocks; i++) assert_false(vk->blocks[i]->dedicated);
}
