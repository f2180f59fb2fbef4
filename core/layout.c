/* The layout of the public option structs, for bindings that mirror them: the Python package builds
 * its ctypes structs from this table at import (shims/python/lithe/_lib.py), so no binding carries a
 * hand copy of a struct; a field added to the header but not here changes sizeof, which the
 * binding checks. */
#include "internal.h"

#include <stddef.h>
#include <string.h>

typedef struct field {
    const char *name;
    size_t offset;
    char kind; /* 'd' double, 'f' float, '?' bool, 'q' int64_t, 'i' int, 'z' size_t */
} field;

#define F(T, f, k) {#f, offsetof(T, f), k}
static const field optimizer_opts[] = {
    F(lithe_optimizer_opts, learn_rate, 'd'),       F(lithe_optimizer_opts, L2, 'd'),
    F(lithe_optimizer_opts, beta1, 'd'),            F(lithe_optimizer_opts, beta2, 'd'),
    F(lithe_optimizer_opts, eps, 'd'),              F(lithe_optimizer_opts, grad_clip, 'd'),
    F(lithe_optimizer_opts, L2_is_weight_decay, '?'), F(lithe_optimizer_opts, use_averages, '?'),
    F(lithe_optimizer_opts, use_radam, '?'),
};
#undef F

static const struct {
    const char *name;
    size_t size;
    const field *fields;
    size_t n;
} structs[] = {
    {"lithe_optimizer_opts", sizeof(lithe_optimizer_opts), optimizer_opts, sizeof optimizer_opts / sizeof optimizer_opts[0]},
};

static size_t find(const char *type) {
    size_t k = 0;
    while (type && k < sizeof structs / sizeof structs[0] && strcmp(structs[k].name, type)) k++;
    return type ? k : sizeof structs / sizeof structs[0];
}

size_t lithe_struct_size(const char *type) {
    size_t k = find(type);
    return k < sizeof structs / sizeof structs[0] ? structs[k].size : 0;
}

const char *lithe_struct_field(const char *type, size_t i, size_t *offset, char *kind) {
    size_t k = find(type);
    if (k == sizeof structs / sizeof structs[0] || i >= structs[k].n) return NULL;
    if (offset) *offset = structs[k].fields[i].offset;
    if (kind) *kind = structs[k].fields[i].kind;
    return structs[k].fields[i].name;
}
