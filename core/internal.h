/* Every internal declaration (prefix lithe__), for lithe's own source files: the headers by
 * audience, all of them. A backend includes backend.h only (docs/backends.md). Not installed. */
#ifndef LITHE_INTERNAL_H
#define LITHE_INTERNAL_H

#include "base.h"
#include "tensor.h"
#include "backend.h"
#include "model.h"
#include "layers.h"

#endif /* LITHE_INTERNAL_H */
