/* ONNX operators of the graph layer (core/graph/ops/): If, Loop and Scan. They never run: the
 * graph layer expands each at load (core/graph/control.c) or refuses it there, naming it; the
 * table lists them so lithe_onnx_op_names() does. */
#include "ops.h"

FWD(f_control) {
    UNUSED_FWD;
    (void)in;
    (void)out;
    return fail(x, node, LITHE_ERR_INTERNAL, "control flow reached the executor; it is expanded at load");
}
