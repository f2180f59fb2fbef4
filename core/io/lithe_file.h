/* Shared by the .lithe reader / writer (lithe_file.c) and its compact-weights part
 * (lithe_file_quant.c). Not installed. */
#ifndef LITHE_IO_LITHE_FILE_H
#define LITHE_IO_LITHE_FILE_H
#include "json.h"

typedef struct out_tensor {
    char name[96];
    const lithe_tensor *t; /* or bytes below */
    const uint8_t *bytes;
    size_t nbytes;
    bool typed;              /* bytes written as bytes_dtype (else U8) ... */
    lithe_dtype bytes_dtype;
    int64_t bytes_numel;     /* ... of this many elements */
} out_tensor;

typedef struct in_tensor {
    const char *name; /* in the header document */
    lithe_dtype dtype;
    int ndim;
    int64_t shape[LITHE_MAX_DIMS];
    uint64_t begin, end;
    const uint8_t *src; /* its end - begin bytes */
} in_tensor;

typedef struct parsed {
    js_doc head, arch, quant; /* quant: __metadata__'s lithe.quantization (root JS_NULL when absent) */
    in_tensor *ts;
    size_t nt;
    const uint8_t *data;
    uint64_t data_len;
} parsed;

/* Saving: for each quantized param among ts[0..*nt), appends its scale (F32) and zero point (I32)
 * tensors to ts (room for 2 per param) and its entry to the JSON object *q ("{...}", left empty
 * when there is none). */
void lithe__lf_quant_out(out_tensor *ts, size_t *nt, js_buf *q);
/* Loading: parses the metadata string (NULL: none) into p->quant, checking its form. */
lithe_status lithe__lf_quant_parse(parsed *p, const js_val *meta_str);
/* Loading: checks the compact tensor t (the param `tname` of node m) against its layer and its
 * quantization entry, and attaches the quantization parameters to v (the tensor made from t). */
lithe_status lithe__lf_compact_param(const parsed *p, const lithe_model *m, const in_tensor *t, const char *tname,
                                     lithe_tensor *v);
const in_tensor *lithe__lf_find(const parsed *p, const char *name);
#endif
