/* A benchmark setting, shared by the lithe command's bench (tools/lithe/bench.c) and the test that
 * checks it against Thinc (tests/test_thinc_golden.c). Public API only. */
#ifndef LITHE_TOOLS_ADAM_TORCH_H
#define LITHE_TOOLS_ADAM_TORCH_H

#include "lithe.h"

/* Thinc's Adam doing the work torch.optim.Adam's defaults do: lithe_adam_defaults() less gradient
 * clipping, parameter averages and L2 (lithe bench --train --adam torch; test_thinc_golden checks
 * it against Thinc's Adam(grad_clip=0, L2=0, use_averages=False)). Thinc's eps placement stays. */
static inline lithe_optimizer_opts lithe_bench_adam_as_torch(void) {
    lithe_optimizer_opts o = lithe_adam_defaults();
    o.grad_clip = 0.0;
    o.use_averages = false;
    o.L2 = 0.0;
    return o;
}

#endif
