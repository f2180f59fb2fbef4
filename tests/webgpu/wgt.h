/* The WebGPU conformance module's harness: the shared device-conformance harness and case list
 * (tests/device/devt.h, cases.h) with "webgpu" as the device backend. */
#ifndef LITHE_TESTS_WEBGPU_WGT_H
#define LITHE_TESTS_WEBGPU_WGT_H

#include "cases.h"

/* failures = 0 and both backends looked up; nonzero (printed) when one is missing */
static inline int wgt_begin(void) { return devt_begin("webgpu"); }

#endif
