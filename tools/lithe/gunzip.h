/* gzip (RFC 1952) with deflate (RFC 1951), decompression only: the lithe command reads Debian's
 * gzipped Fashion-MNIST with it, natively and in the WASI build, which has no zlib (Debian ships
 * no zlib for wasm32-wasi). Written here for the one job; tests/gunzip_check.c and
 * tests/cli_gunzip.py check it against Python's zlib. */
#ifndef LITHE_TOOLS_GUNZIP_H
#define LITHE_TOOLS_GUNZIP_H
#include <stddef.h>
#include <stdint.h>

/* True when in starts with the gzip magic bytes 1f 8b. */
int lithe_tool_is_gzip(const uint8_t *in, size_t n);

/* Decompresses the single gzip member in[0..n) into a new malloc'd buffer of *out_len bytes
 * (the size the member's trailer states, checked against max_out before it is allocated, and
 * against the data that came out, with the CRC-32). Returns 0; or -1 with a message in err and
 * nothing allocated. */
int lithe_tool_gunzip(const uint8_t *in, size_t n, size_t max_out, uint8_t **out, size_t *out_len, char *err,
                      size_t errcap);
#endif
