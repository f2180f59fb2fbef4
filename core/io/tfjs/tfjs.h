/* The TF.js layers-format importer's shared parts (core/io/tfjs/): its protobuf writer (pb.c), the
 * weights reader (weights.c), the lowering helpers (lower.c), the per-layer lowering table
 * (layers.c) and the topology and public entry points (tfjs.c). Names shared across these files
 * are lithe__tfjs_* in the library (the #defines below). */
#ifndef LITHE_IO_TFJS_H
#define LITHE_IO_TFJS_H

#include "../json.h"
#include "../onnx.h" /* lithe__half_to_f32 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHAT "tfjs"
#define NAME_MAX_LEN 200 /* longest layer / weight name taken: value names are built from them */
#define MAX_LAYERS 4096
#define MAX_TENSORS 8192

#define wb_put lithe__tfjs_wb_put
#define wb_free lithe__tfjs_wb_free
#define wb_int lithe__tfjs_wb_int
#define wb_str lithe__tfjs_wb_str
#define wb_sub lithe__tfjs_wb_sub
#define at_int lithe__tfjs_at_int
#define at_ints lithe__tfjs_at_ints
#define at_float lithe__tfjs_at_float
#define at_str lithe__tfjs_at_str
#define tensor_proto lithe__tfjs_tensor_proto
#define is_str lithe__tfjs_is_str
#define num_of lithe__tfjs_num_of
#define read_weights lithe__tfjs_read_weights
#define lfail lithe__tfjs_lfail
#define fresh lithe__tfjs_fresh
#define node lithe__tfjs_node
#define unary lithe__tfjs_unary
#define binary lithe__tfjs_binary
#define constant lithe__tfjs_constant
#define scalar lithe__tfjs_scalar
#define transpose lithe__tfjs_transpose
#define as_nchw lithe__tfjs_as_nchw
#define as_nhwc lithe__tfjs_as_nhwc
#define need_weight lithe__tfjs_need_weight
#define cfg_int lithe__tfjs_cfg_int
#define cfg_pair lithe__tfjs_cfg_pair
#define cfg_bool lithe__tfjs_cfg_bool
#define cfg_float lithe__tfjs_cfg_float
#define cfg_str lithe__tfjs_cfg_str
#define channels_last lithe__tfjs_channels_last
#define activation_known lithe__tfjs_activation_known
#define activate lithe__tfjs_activate
#define activation_of lithe__tfjs_activation_of
#define identity_layers lithe__tfjs_identity_layers
#define layer_names lithe__tfjs_layer_names
#define in_list lithe__tfjs_in_list
#define lower_layer lithe__tfjs_lower_layer

typedef struct wb {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} wb;

typedef struct weight {
    char name[NAME_MAX_LEN + 1];
    int ndim;
    int64_t shape[LITHE_MAX_DIMS];
    int64_t numel;
    float *data; /* numel values, dequantized */
    bool emitted;
} weight;

/* A Keras tensor: its value in the NHWC (Keras) layout and / or, for rank 4, in NCHW ("" until
 * made); its shape in Keras order, -1 where unknown. */
typedef struct ktensor {
    char layer[NAME_MAX_LEN + 1];
    int64_t node, index;
    char nhwc[NAME_MAX_LEN + 48], nchw[NAME_MAX_LEN + 48];
    int rank;
    int64_t shape[LITHE_MAX_DIMS];
} ktensor;

typedef struct lower {
    wb nodes, inits, inputs, outputs;
    weight *w;
    size_t n_w;
    ktensor *kt;
    size_t n_kt;
    size_t counter;
    const char *layer, *cls; /* the layer being lowered, for errors */
    bool layer_frozen;       /* its config says "trainable": false */
    bool one_d;              /* a 1-D layer lowered as its 2-D twin over (N, 1, T, C) */
    wb frozen;               /* the names of its weights, each NUL-terminated: frozen after the load */
} lower;

/* pb.c: the protobuf writer */
void wb_put(wb *b, const void *d, size_t n);
void wb_free(wb *b);
void wb_int(wb *b, unsigned field, int64_t v);
void wb_str(wb *b, unsigned field, const char *s);
void wb_sub(wb *b, unsigned field, wb *sub);
void at_int(wb *attrs, const char *name, int64_t v);
void at_ints(wb *attrs, const char *name, const int64_t *v, size_t n);
void at_float(wb *attrs, const char *name, float f);
void at_str(wb *attrs, const char *name, const char *s);
void tensor_proto(wb *t, const char *name, int ndim, const int64_t *dims, const float *f, const int64_t *iv,
                  int64_t numel);
/* weights.c: the weights */
bool is_str(const js_val *v, const char *s);
bool num_of(const js_val *v, double *out);
lithe_status read_weights(const js_val *manifest, const uint8_t *data, size_t len, const size_t *group_bytes,
                          size_t n_groups, weight **out, size_t *n_out);
/* lower.c: lowering helpers, config values, activations */
lithe_status lfail(const lower *L, lithe_status s, const char *fmt, ...) LITHE__PRINTF(3, 4);
void fresh(lower *L, const char *what, char *buf, size_t cap);
void node(lower *L, const char *op, const char *const *ins, size_t nin, const char *out, wb *attrs);
void unary(lower *L, const char *op, const char *in, char *out, size_t cap, wb *attrs);
void binary(lower *L, const char *op, const char *a, const char *b, char *out, size_t cap);
void constant(lower *L, int ndim, const int64_t *dims, const float *f, const int64_t *iv, int64_t numel, char *out,
              size_t cap);
void scalar(lower *L, float v, char *out, size_t cap);
void transpose(lower *L, const char *in, const int64_t *perm, int n, char *out, size_t cap);
const char *as_nchw(lower *L, ktensor *t);
const char *as_nhwc(lower *L, ktensor *t);
lithe_status need_weight(lower *L, const char *suffix, int ndim, const int64_t *shape, weight **out);
lithe_status cfg_int(lower *L, const js_val *cfg, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out);
lithe_status cfg_pair(lower *L, const js_val *cfg, const char *key, const int64_t *def, int64_t *out);
lithe_status cfg_bool(lower *L, const js_val *cfg, const char *key, bool def, bool *out);
lithe_status cfg_float(lower *L, const js_val *cfg, const char *key, double def, double *out);
const char *cfg_str(const js_val *cfg, const char *key, const char *def);
lithe_status channels_last(lower *L, const js_val *cfg);
bool activation_known(const char *a);
lithe_status activate(lower *L, ktensor *t, const char *a);
lithe_status activation_of(lower *L, const js_val *cfg, const char **out);
/* layers.c: the layers */
extern const char *const identity_layers[];
extern const char *const layer_names[];
bool in_list(const char *const *l, const char *s);
lithe_status lower_layer(lower *L, const char *cls, const js_val *cfg, ktensor **ins, size_t n_in, ktensor *o);

/* save.c (in the core library, not the importers): keeps model.json's text on the loaded graph
 * node (its `tfjs_json` attr), which lithe_tfjs_save writes back with the node's current weights. */
lithe_status lithe__tfjs_keep_json(lithe_model *m, const char *json, size_t len);

/* Layer names unique and Dropout rates in [0, 1), before lowering (check.c). */
lithe_status lithe__tfjs_check_layers(const js_val *layers);
#endif
