/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A map from 64-bit key fingerprints to caller-defined entries: a chained
 * hash whose entries begin with struct fpmap_entry, recycled through a
 * small free list, so a table whose keys come and go (a lock taken and
 * given back on every request) allocates only while it grows. An empty
 * map allocates nothing; its n_entries is the caller's fast-path test.
 *
 * Fingerprints stand for keys (checksum64 of the key bytes): two keys
 * with one fingerprint share an entry, which for the lock tables built on
 * this (net/intent.c, engine/keyq.c) only costs waiting.
 *
 * Not thread-safe: one owner (a shard) uses it.
 */
#ifndef SCREE_BASE_FPMAP_H
#define SCREE_BASE_FPMAP_H

#include <stddef.h>
#include <stdint.h>

/* The first member of every entry. */
struct fpmap_entry {
        struct fpmap_entry *next;       /* bucket chain or free list */
        uint64_t fp;
};

struct fpmap {
        struct fpmap_entry **buckets;   /* n_buckets, a power of 2; NULL until used */
        size_t n_buckets, n_entries;
        struct fpmap_entry *free_list;
        size_t n_free, entry_bytes;
};

/* An empty map of entries of entry_bytes (>= sizeof(struct fpmap_entry)). */
void fpmap_init(struct fpmap *m, size_t entry_bytes);

/* Frees the map and every entry still in it. */
void fpmap_fini(struct fpmap *m);

/* The entry of fp, or NULL. */
void *fpmap_find(const struct fpmap *m, uint64_t fp);

/* Adds an entry for fp, zeroed past its header, and returns it, or NULL
 * (out of memory). REQUIRES: fp not in the map. */
void *fpmap_insert(struct fpmap *m, uint64_t fp);

/* Removes entry e (from fpmap_insert; recycled or freed). */
void fpmap_remove(struct fpmap *m, void *e);

#endif
