/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Header fields as http_parser hands them over (in pieces, as bytes
 * arrive): each piece is copied into one buffer, and a field is a pair of
 * (offset, length) runs into it, so the reader's input buffer can be
 * reused at once. Used for requests (request.c) and origin responses
 * (fetch.c). One thread at a time.
 */
#ifndef SCREE_PROXY_FIELDS_H
#define SCREE_PROXY_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/buf.h"

#define PX_MAX_HEADERS 100

struct px_hdr {
        uint32_t name_off, name_len, val_off, val_len;
};

struct px_fields {
        struct px_buf b;                /* pieces; may hold other bytes first (a URL) */
        struct px_hdr h[PX_MAX_HEADERS];
        unsigned n;
        bool in_value;                  /* the last piece was a value's */
        bool too_many;                  /* more than PX_MAX_HEADERS fields came */
};

/* Empties f, keeping its buffer's memory (up to 64 KiB). */
void px_fields_reset(struct px_fields *f);

/* Frees f's memory. */
void px_fields_fini(struct px_fields *f);

/* Appends a piece of a field's name / value (at, len: borrowed). 0 or
 * -ENOMEM. Past PX_MAX_HEADERS fields, sets too_many and drops them. */
int px_fields_name(struct px_fields *f, const char *at, size_t len);
int px_fields_value(struct px_fields *f, const char *at, size_t len);

/* Field i's name is name (NUL-terminated, lower case), any case. */
bool px_fields_is(const struct px_fields *f, unsigned i, const char *name);

/* Field i's value (trimmed of blanks), its length in *ret_len;
 * valid until the next call that adds to f. */
const char *px_fields_val(const struct px_fields *f, unsigned i, size_t *ret_len);

/* Whether a Connection field of f names field i (it is then
 * hop-by-hop: RFC 9110 7.6.1). */
bool px_fields_named_by_connection(const struct px_fields *f, unsigned i);

/* Whether the comma-separated list v (len bytes) holds token (tlen
 * bytes), in any case. */
bool px_list_has(const char *v, size_t len, const char *token, size_t tlen);

#endif
