/* The runtime's tuning knobs (lithe_set_options), each overridable by its environment variable
 * (core/options.def, docs/options.md). The values live in one explicit struct, set before the
 * first operation as the allocator is. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define KNOB_LEN 32
static char values[LITHE__KNOB_COUNT][KNOB_LEN]; /* "" : unset (the built-in choice) */

static const char *const env_names[LITHE__KNOB_COUNT] = {
#define LITHE_KNOB(field, env) env,
#include "options.def"
#undef LITHE_KNOB
};

lithe_options lithe_options_defaults(void) {
    lithe_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    return o;
}

lithe_status lithe_set_options(const lithe_options *o) {
    LITHE__CHECK_ARG(o, "lithe_set_options", "options is NULL");
    if (o->size < offsetof(lithe_options, cpu_isa) + sizeof(const char *) || o->size > sizeof *o)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_set_options: size %zu (this lithe's struct is %zu bytes: "
                                                  "start from lithe_options_defaults())", o->size, sizeof *o);
    const char *const given[LITHE__KNOB_COUNT] = {
#define LITHE_KNOB(field, env) offsetof(lithe_options, field) < o->size ? o->field : NULL,
#include "options.def"
#undef LITHE_KNOB
    };
    for (int k = 0; k < LITHE__KNOB_COUNT; k++)
        if (given[k] && strlen(given[k]) >= KNOB_LEN)
            return lithe__fail(LITHE_ERR_VALUE, "lithe_set_options: %s '%s' is too long", env_names[k], given[k]);
    for (int k = 0; k < LITHE__KNOB_COUNT; k++) {
        memset(values[k], 0, KNOB_LEN);
        if (given[k]) memcpy(values[k], given[k], strlen(given[k]));
    }
    return LITHE_OK;
}

const char *lithe__knob(lithe__knob_id k) {
    const char *env = getenv(env_names[k]);
    if (env && *env) return env;
    return values[k][0] ? values[k] : NULL;
}
