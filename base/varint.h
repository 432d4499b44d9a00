/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unsigned LEB128 varints: 7 bits per byte, low groups first, high bit set
 * on every byte but the last. A u64 takes 1 to 10 bytes. Decoding is
 * hardened: it never reads past len, and rejects encodings that overflow
 * 64 bits. Pure. Any thread.
 */
#ifndef SCREE_BASE_VARINT_H
#define SCREE_BASE_VARINT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VARINT_MAX_BYTES 10

/* Bytes varint_put_u64 would write for v (1..10). */
unsigned varint_size_u64(uint64_t v);

/* Writes v at dst (room for VARINT_MAX_BYTES, or varint_size_u64(v)).
 * Returns the bytes written. */
unsigned varint_put_u64(uint8_t *dst, uint64_t v);

/*
 * Decodes one varint from the len bytes at src. Returns the bytes consumed
 * (> 0) and writes *ret_v; 0 if src ends mid-varint (need more input);
 * -SCREE_ECORRUPT if the encoding is longer than 10 bytes or overflows.
 * *ret_v is written only on success.
 */
ssize_t varint_get_u64(const uint8_t *src, size_t len, uint64_t *ret_v);

#endif
