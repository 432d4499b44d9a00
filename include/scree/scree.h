/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libscree: the scree storage engine as a C library (docs/embedding.md).
 *
 * A database is a directory. scree_open starts the engine's shard threads
 * (one per CPU by default, each pinned, each owning a share of every
 * table's tablets) and returns a handle; the program's own threads call
 * in, synchronously or asynchronously, and scree_close stops the shards.
 * Data lives in tables named by paths ("/app/events"), sorted by key;
 * a key is a tuple of typed parts (scree_key_encode) or, in a table
 * created with no parts, any byte string.
 *
 * Threads. A scree_db, a scree_table and a scree_options being read are
 * safe to use from any number of threads at once. A scree_batch, a
 * scree_iter, a scree_rows, a scree_value and a scree_cq belong to one
 * thread at a time (hand one over, never share it). Every synchronous
 * call blocks its thread until the shard that owns the key answered; none
 * may be called from a shard thread -- that is, from inside a
 * scree_update_fn -- and such a call fails with -SCREE_EONSHARD instead of
 * deadlocking. The asynchronous forms (*_async) never block: the result
 * comes back as a scree_completion in a completion queue (scree_cq) the
 * caller polls, whose file descriptor becomes readable when completions
 * wait, for the caller's epoll, libuv or libevent loop.
 *
 * Errors. Every call that can fail returns an int: 0 (or a documented
 * count), or a negative error: -errno, or -SCREE_E* (scree_errors.h).
 * scree_strerror names either. -SCREE_ENOTFOUND is an answer (no such
 * key), not a failure. Every call that returns a negative error leaves a
 * message for its thread in scree_last_error(). Bad input never aborts
 * the program: a NULL where a pointer is needed gives -EINVAL (the
 * functions below say which may be NULL); a free function accepts NULL;
 * an accessor given a NULL handle returns 0 or NULL. A full disk gives
 * -ENOSPC and loses nothing acknowledged.
 *
 * Memory. Arguments are borrowed for the call (synchronous) or copied
 * before the call returns (asynchronous: keys, values, bounds, batches),
 * unless a function says otherwise. What the library returns is owned as
 * each function states: a scree_value, a scree_rows and a completion's
 * results are the caller's to free, with their own free function;
 * pointers into them are valid until that free.
 *
 * Durability. With commitlog-sync batch (the default) a write is
 * acknowledged -- its call returns 0, or its completion arrives -- once
 * its commit-log record is on disk: it survives kill -9 and power loss.
 * With periodic, at once; a crash may lose the last period's writes.
 *
 * The API follows semantic versioning: SCREE_API_VERSION_MAJOR changes
 * only when a function's meaning or a type's layout changes; a new
 * function raises SCREE_API_VERSION_MINOR. Only scree_* symbols are
 * exported.
 */
#ifndef SCREE_H
#define SCREE_H

#include <errno.h>       /* the -errno values the calls return */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <scree/scree_errors.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SCREE_API_VERSION_MAJOR 1
#define SCREE_API_VERSION_MINOR 1
#define SCREE_API_VERSION (SCREE_API_VERSION_MAJOR * 100 + SCREE_API_VERSION_MINOR)

/* The API version the library implements (SCREE_API_VERSION's form). */
SCREE_API int scree_api_version(void);
/* The library's release, e.g. "0.1.0". Static. */
SCREE_API const char *scree_version(void);

/* The message of this thread's last call that returned a negative error
 * (naming the option, part, path or limit), or "" if none did. Every such
 * call sets it, -SCREE_ENOTFOUND answers included; a call that succeeds
 * leaves it as it was (as errno). Valid until the thread's next scree
 * call. Never NULL. Any thread. */
SCREE_API const char *scree_last_error(void);

/* ---- logging ----
 *
 * The engine logs what an operator may want to know -- damaged commit-log
 * records salvage skipped, files an open removed, a background flush or
 * compaction that failed -- by default as timestamped lines on stderr
 * (info level and above). A program may take the lines instead.
 */
#define SCREE_LOG_ERROR 0
#define SCREE_LOG_WARN 1
#define SCREE_LOG_INFO 2
#define SCREE_LOG_DEBUG 3

/* A log line: level SCREE_LOG_*, msg the text alone (no time, level or
 * newline; borrowed for the call). */
typedef void (*scree_log_fn)(void *arg, int level, const char *msg);

/*
 * Sends the library's log lines to fn(arg, level, msg) instead of stderr,
 * for the whole process (every database); fn NULL: back to stderr. 0, or
 * -EBUSY while a database is open (its threads may be logging): set it
 * before scree_open or after scree_close. fn is called on the thread that
 * logs -- a shard thread (most lines) or the thread in scree_open or
 * scree_close --, on several at once: it must be thread-safe and quick,
 * must not block (write to a buffer or a pipe, not to a slow disk or a
 * socket) and must not call any scree function. Assertion failures and
 * sanitizer reports still go to stderr. Any thread.
 */
SCREE_API int scree_set_log(scree_log_fn fn, void *arg);

typedef struct scree_options scree_options;
typedef struct scree_db scree_db;
typedef struct scree_table scree_table;
typedef struct scree_batch scree_batch;
typedef struct scree_value scree_value;
typedef struct scree_rows scree_rows;
typedef struct scree_iter scree_iter;
typedef struct scree_cq scree_cq;

/* ---- options ----
 *
 * Named as the server's settings (docs/server.md), values as strings:
 *   smp                  shards (threads); default: as many as the
 *                        database was made with, a new one one per CPU
 *                        the process may run on; at most 256
 *   memory               the engine's memory budget, split as the
 *                        server's (half memtables, a quarter block cache,
 *                        over the shards); sizes take k/m/g/t (or kb,
 *                        kib, ...) suffixes; default 1GiB, at least 16MiB
 *   cache-size           the block cache over all shards; default: a
 *                        quarter of memory
 *   commitlog-sync       batch (default) or periodic
 *   commitlog-sync-period-ms   periodic's period, 1..60000; default 10
 *   max-key-bytes        default and at most 32768 (the engine's limit)
 *   max-value-bytes      default 8MiB, at most 16MiB
 *   pin                  yes (default): pin each shard thread to a CPU
 *   prefault             yes/no (default no): fault the memtables'
 *                        and cache's memory in at open
 *   salvage              yes/no (default no): skip damaged commit-log
 *                        records at open instead of refusing to open
 *   idle-poll-us         how long an idle shard polls before it sleeps;
 *                        default 50
 * Not thread-safe while being changed.
 */

/* A new set of defaults. NULL on out of memory. */
SCREE_API scree_options *scree_options_new(void);
/* Accepts NULL. */
SCREE_API void scree_options_free(scree_options *o);
/* Sets option name to value (both borrowed). 0, or -EINVAL for an
 * unknown name or a bad value (scree_last_error says which), or a NULL
 * o, name or value. */
SCREE_API int scree_options_set(scree_options *o, const char *name, const char *value);
/* Writes option name's value as text into buf (cap bytes, NUL-terminated;
 * buf may be NULL with cap 0). Returns its length, or -EINVAL (unknown
 * name; NULL o or name; NULL buf with cap > 0), -ENOSPC (buf too small). */
SCREE_API int scree_options_get(const scree_options *o, const char *name, char *buf, size_t cap);

/* ---- opening and closing ---- */

/*
 * Opens the database in directory dir (created if missing; borrowed),
 * with options o (NULL: defaults; borrowed for the call), starting its
 * shard threads; replays the commit logs. Each shard preallocates its
 * commit log's current segment and the next (32 MiB each), so an open
 * needs room on the disk (docs/embedding.md). Returns 0 and *ret, or:
 * -EWOULDBLOCK (another process -- or another scree_open in this one --
 * has dir open: scree_last_error names its PID), -EINVAL (a bad option;
 * dir made with another smp; a NULL dir or ret), -SCREE_ECORRUPT
 * (damaged data: see the message), -ENOSPC (no room for the commit
 * logs), -ENOMEM, -errno. Any thread but a shard's.
 */
SCREE_API int scree_open(const char *dir, const scree_options *o, scree_db **ret);

/*
 * Waits for the operations in flight to finish, flushes nothing it need
 * not (the commit log holds every acknowledged write), stops the shard
 * threads and frees db. Table handles, iterators and completion queues
 * must be freed first, and no call may be in flight. -EBUSY (nothing
 * done): a table handle or completion queue is still open, or the
 * caller still holds a value of 32 KiB or more (scree_get_value): close
 * or free it first.
 * Returns 0, or the first error a shard met closing (the data written is
 * still safe in its commit log). Accepts NULL. Not from a shard thread.
 */
SCREE_API int scree_close(scree_db *db);

/* Number of shards (threads); 0 for a NULL db. Any thread. */
SCREE_API unsigned scree_shards(const scree_db *db);

/* ---- composite keys ----
 *
 * A tuple key's parts are signed or unsigned 64-bit integers, byte
 * strings, or NULL, encoded so that encodings compare as bytes (memcmp,
 * shorter first) the way the tuples compare part by part: NULL first,
 * integers by value, byte strings as unsigned bytes, a tuple before its
 * extensions. So every key that starts with the parts of a prefix lies in
 * [encode(prefix), scree_key_prefix_end(encode(prefix))).
 * Byte layout: docs/format/tuple.md. Pure; any thread.
 */
typedef enum scree_type {
        SCREE_NULL = 0,
        SCREE_I64 = 1,
        SCREE_U64 = 2,
        SCREE_BYTES = 3,
} scree_type;

typedef struct scree_part {
        scree_type type;
        union {
                int64_t i64;
                uint64_t u64;
                struct {
                        const void *p;          /* borrowed */
                        size_t len;
                } bytes;
        } v;
} scree_part;

/* Encodes parts[0..n) into dst (cap bytes). 0 and *ret_len; -ENOSPC when
 * cap is too small (*ret_len is then the size needed; dst may be NULL
 * with cap 0); -EINVAL for an unknown type, a NULL ret_len, NULL parts
 * with n > 0, a NULL dst with cap > 0 or a bytes part NULL with a
 * length. */
SCREE_API int scree_key_encode(const scree_part *parts, size_t n, void *dst, size_t cap,
                               size_t *ret_len);

/* Decodes a key (len bytes) into at most max parts; a byte-string part's
 * bytes are unescaped into scratch (scratch_cap >= len is always enough)
 * and point there. Returns the number of parts, or -EINVAL (not a whole
 * encoding, more than max parts, scratch too small; NULL key, parts or
 * scratch with a length, max or scratch_cap > 0). */
SCREE_API int scree_key_decode(const void *key, size_t len, scree_part *parts, size_t max,
                               void *scratch, size_t scratch_cap);

/* Writes the smallest key after every key that starts with prefix (len
 * bytes, whole parts) into dst (cap >= len + 1): an exclusive end for a
 * prefix's range. Returns len + 1, or 0 when cap is too small, dst is
 * NULL or prefix NULL with len > 0 (scree_last_error says which). */
SCREE_API size_t scree_key_prefix_end(const void *prefix, size_t len, void *dst, size_t cap);

/* ---- directories and tables ----
 *
 * Paths: "/" then names of 1..255 bytes of [A-Za-z0-9_.-] joined by
 * "/", at most 1024 bytes. /redis and /scree hold the server's own
 * tables (its Redis keyspace): the library may read them, but a program
 * should keep its tables elsewhere.
 * Changes are durable and visible on every shard when they return.
 */

/* Creates directory path (its parent must exist). 0, -EEXIST,
 * -SCREE_ENOTFOUND (no parent), -EINVAL (a bad path; a NULL db or path). */
SCREE_API int scree_mkdir(scree_db *db, const char *path);
/* Removes an empty directory. 0, -SCREE_ENOTFOUND, -ENOTEMPTY, -EINVAL
 * (as scree_mkdir's). */
SCREE_API int scree_rmdir(scree_db *db, const char *path);

typedef struct scree_table_spec {
        const char *path;
        /* The key's parts, each SCREE_I64, SCREE_U64 or SCREE_BYTES
         * (n_parts 1..16). n_parts 0: keys are plain byte strings (no
         * tuple encoding), sorted as memcmp sorts them. */
        size_t n_parts;
        const scree_type *parts;
        /* 0: ordered -- rows sorted by key, a range read is one walk.
         * k (1..n_parts): hashed on the first k parts -- rows spread over
         * the shards by the hash of those parts (no hot tablet for
         * sequential keys), sorted by key within equal hash parts; a
         * range read then stays within one value of those parts. */
        size_t hash_parts;
        /* Tablets to start with (0 or 1: one), spread over the shards
         * (the library does not split or move tablets by itself yet). */
        uint32_t tablets;
        /* Options as the server's TABLE.CREATE takes them
         * (docs/tables.md), space-separated name value pairs, e.g.
         * "split-size 128mb default-ttl 60000 split-by-load on"; NULL or
         * "": the defaults. */
        const char *options;
} scree_table_spec;

/* Creates a table. 0, -EEXIST, -SCREE_ENOTFOUND (no parent directory),
 * -EINVAL (a bad path, part or option: scree_last_error says which; a
 * NULL db, spec, spec->path, or spec->parts with n_parts > 0). */
SCREE_API int scree_table_create(scree_db *db, const scree_table_spec *spec);
/* Drops a table: its rows are gone at once (its files are deleted in the
 * background). 0, -SCREE_ENOTFOUND, -EINVAL (path is a directory; a NULL
 * db or path). */
SCREE_API int scree_table_drop(scree_db *db, const char *path);

/* One entry of a directory (borrowed for the callback). */
typedef struct scree_entry {
        const char *name;
        bool is_table;
} scree_entry;

/* Calls fn(arg, entry) for each entry of directory path, in name order;
 * fn returns 0 to go on, anything else to stop (returned). 0, or
 * -SCREE_ENOTFOUND, -ENOTDIR, -EINVAL (a NULL db, path or fn). arg may be
 * NULL. */
SCREE_API int scree_list(scree_db *db, const char *path,
                         int (*fn)(void *arg, const scree_entry *entry), void *arg);

typedef struct scree_table_info {
        uint32_t id;
        size_t n_parts;                 /* 0: byte-string keys */
        scree_type parts[16];
        size_t hash_parts;              /* 0: ordered */
        uint32_t tablets;
        /* Estimates over the tablets: bytes on disk and in memtables, and
         * entries (every version not yet compacted away counts). */
        uint64_t bytes, rows;
        uint32_t shard_tablets[256];    /* tablets on each shard (scree_shards of them) */
} scree_table_info;

/* Describes table path into *ret. 0, -SCREE_ENOTFOUND, -EINVAL (also a
 * NULL db, path or ret). */
SCREE_API int scree_table_describe(scree_db *db, const char *path, scree_table_info *ret);

/*
 * A handle on table path, for the row operations: resolves the name once.
 * 0 and *ret (free with scree_table_close, before scree_close), or
 * -SCREE_ENOTFOUND, -EINVAL (also a NULL db, path or ret). The handle
 * names the table it found: should
 * that table be dropped, operations through it fail with -SCREE_ENOTFOUND
 * (even if a table of the same name is created again). Any thread.
 */
SCREE_API int scree_table_open(scree_db *db, const char *path, scree_table **ret);
/* Accepts NULL. No operation through t may be in flight. */
SCREE_API void scree_table_close(scree_table *t);

/* ---- rows: synchronous ----
 *
 * Keys are encoded tuples of the table's parts (or byte strings for a
 * table of no parts), 1..max-key-bytes bytes; values 0..max-value-bytes
 * (a value may be NULL when its length is 0).
 * Common errors: -EINVAL (a key that is not of the table's schema, too
 * long, or a value too long; a NULL table or key, a NULL value with a
 * length), -SCREE_ENOTFOUND from a write (the table
 * was dropped), -SCREE_ERATELIMIT (the key's partition is over its
 * table's per-partition limit: nothing done), -ENOSPC (disk full:
 * nothing acknowledged), -SCREE_EONSHARD, -SCREE_ESHUTDOWN (scree_close
 * began).
 */

/* Writes (key, value), replacing any earlier value; ttl_ms > 0: the row
 * expires that many milliseconds from now (0: never; at most 2^61:
 * -EINVAL beyond). */
SCREE_API int scree_put(scree_table *t, const void *key, size_t key_len, const void *value,
                        size_t value_len, uint64_t ttl_ms);

/* Deletes key (0 whether or not it existed). */
SCREE_API int scree_del(scree_table *t, const void *key, size_t key_len);

/*
 * Reads key's value into buf (cap bytes; NULL with cap 0 asks for the
 * length): 0 with *ret_len its length; -SCREE_ENOTFOUND (absent or
 * expired); -ENOBUFS when cap < the value's length (nothing copied;
 * *ret_len is the length needed: call again with room); -EINVAL for a
 * NULL buf with cap > 0. ret_len may be NULL. The value is copied once,
 * by the shard, straight into buf.
 */
SCREE_API int scree_get(scree_table *t, const void *key, size_t key_len, void *buf, size_t cap,
                        size_t *ret_len);

/* Reads key's value into a new scree_value: 0 and *ret, -SCREE_ENOTFOUND,
 * -EINVAL (also a NULL ret). A value under 32 KiB is copied once, by the shard; a larger one is not
 * copied at all: it points into the engine's memory (the memtable or the
 * cached block it was found in), which the engine keeps for it until
 * scree_value_free -- free such values before scree_close, which refuses
 * (-EBUSY) while one is held. */
SCREE_API int scree_get_value(scree_table *t, const void *key, size_t key_len,
                              scree_value **ret);

/* A value's bytes and length; valid until scree_value_free. NULL and 0
 * for a NULL v. */
SCREE_API const void *scree_value_data(const scree_value *v);
SCREE_API size_t scree_value_len(const scree_value *v);
/* Its expiry (wall-clock ms since the epoch), or 0 for none (or a NULL
 * v). */
SCREE_API uint64_t scree_value_expiry_ms(const scree_value *v);
/* Accepts NULL. Any thread; before scree_close for a value of 32 KiB or
 * more (its memory goes back to its shard, in a message). */
SCREE_API void scree_value_free(scree_value *v);

/*
 * A read-modify-write, run on the shard that owns the key, with no other
 * operation on the key in between (counters, appends, compare-and-set).
 * cur is the key's value (NULL, cur_len 0 when absent or expired),
 * borrowed for the call. The function decides by its return value:
 *   SCREE_UPDATE_NONE     write nothing;
 *   SCREE_UPDATE_PUT      write out->value (out->value_len bytes, memory
 *                         the function's -- e.g. in arg -- valid until
 *                         scree_update returns or its completion
 *                         arrives) with out->ttl_ms (0: none);
 *   SCREE_UPDATE_DEL      delete the key;
 *   < 0                   fail the update with that error.
 * It runs on a shard thread: it must be quick, must not block and must
 * not call the library's synchronous functions.
 */
#define SCREE_UPDATE_NONE 0
#define SCREE_UPDATE_PUT 1
#define SCREE_UPDATE_DEL 2

typedef struct scree_update_out {
        const void *value;
        size_t value_len;
        uint64_t ttl_ms;
} scree_update_out;

typedef int (*scree_update_fn)(void *arg, const void *cur, size_t cur_len,
                               scree_update_out *out);

/* Runs fn on key as above (arg, fn's, may be NULL). Returns what fn
 * returned (SCREE_UPDATE_*) once its write, if any, is acknowledged, or
 * an error (fn's, or the read's or write's; -EINVAL for a NULL fn). */
SCREE_API int scree_update(scree_table *t, const void *key, size_t key_len, scree_update_fn fn,
                           void *arg);

/* ---- atomic write batches ----
 *
 * A batch of puts and deletes, possibly over several tables, applied all
 * or nothing: a crash leaves every one of them or none. A batch whose
 * rows lie on one shard (keys of a hashed table that share its hash
 * parts; the rows of one tablet) is one commit-log record there; one
 * whose rows lie on several shards commits with a two-phase commit over
 * their commit logs (docs/transactions.md), which costs a durable record
 * more on each of them, and is resolved at the next open if a crash
 * comes in between.
 */

/* A new empty batch. NULL on out of memory. */
SCREE_API scree_batch *scree_batch_new(void);
/* Accepts NULL. */
SCREE_API void scree_batch_free(scree_batch *b);
/* Empties b for reuse. Accepts NULL. */
SCREE_API void scree_batch_clear(scree_batch *b);
/* Adds a put (key and value copied into b), its key checked as
 * scree_put checks it. 0, -EINVAL (a key not of t's schema, a key or
 * value too long, a TTL over 2^61 ms; a NULL b, t or key, a NULL value
 * with a length), -SCREE_ENOTFOUND (t was dropped), -ENOMEM. t must stay
 * open until the batch is written. */
SCREE_API int scree_batch_put(scree_batch *b, scree_table *t, const void *key, size_t key_len,
                              const void *value, size_t value_len, uint64_t ttl_ms);
/* Adds a delete, checked as a put. 0, -EINVAL, -SCREE_ENOTFOUND, -ENOMEM. */
SCREE_API int scree_batch_del(scree_batch *b, scree_table *t, const void *key, size_t key_len);
/* Operations in b; 0 for a NULL b. */
SCREE_API size_t scree_batch_count(const scree_batch *b);

/* Writes b atomically. 0 once acknowledged; errors as the row writes'
 * (nothing written), or -EINVAL for an empty or NULL batch or a NULL db;
 * one error means
 * something was: -EIO from a batch across shards that was decided but
 * whose part a shard could not apply for 10 s (a full disk): it is
 * applied once the database is next opened, and its rows wait until then.
 * b is unchanged (free or clear it). */
SCREE_API int scree_write(scree_db *db, const scree_batch *b);

/* ---- range reads ----
 *
 * A range of a table: keys in [start, end) -- start NULL: the table's
 * first key; end NULL: past its last -- in ascending order, or descending
 * with reverse. In a hashed table a range lies within one value of the
 * hash parts: start and end (both given) must begin with the same hash
 * parts; with both NULL the whole table is walked, in hash order.
 * Rows written while a range is read may or may not be seen; no row
 * written before the call is missed.
 */
typedef struct scree_range {
        const void *start;
        size_t start_len;
        const void *end;
        size_t end_len;
        bool reverse;
} scree_range;

/*
 * Reads one page: at most limit (1..) rows of range r from its start (or
 * from cursor, a position a previous page returned; NULL: the range's
 * start; cursor_len must then be 0). Returns 0 and *ret, a scree_rows
 * the caller frees (possibly with no rows). -EINVAL (limit 0, a bound too
 * long, a hashed table's bounds not beginning with the same hash parts;
 * a NULL t, r or ret), -SCREE_ENOTFOUND (the table was dropped). Bounds
 * are any bytes: whole tuples, or prefixes and their
 * scree_key_prefix_end.
 */
SCREE_API int scree_scan(scree_table *t, const scree_range *r, const void *cursor,
                         size_t cursor_len, uint32_t limit, scree_rows **ret);

/* Rows of a page; row i (0..count) key and value, valid until
 * scree_rows_free; NULL for an i past the end. ret_len may be NULL. A
 * NULL rows has no rows: 0, NULL. */
SCREE_API size_t scree_rows_count(const scree_rows *rows);
SCREE_API const void *scree_rows_key(const scree_rows *rows, size_t i, size_t *ret_len);
SCREE_API const void *scree_rows_value(const scree_rows *rows, size_t i, size_t *ret_len);
/* Expiry of row i (wall-clock ms), 0 for none (or no such row). */
SCREE_API uint64_t scree_rows_expiry_ms(const scree_rows *rows, size_t i);
/* The cursor of the next page (pass it to scree_scan with the same
 * range), or NULL when the range is done (or rows is NULL). ret_len may
 * be NULL. Valid until scree_rows_free. */
SCREE_API const void *scree_rows_cursor(const scree_rows *rows, size_t *ret_len);
/* Accepts NULL. Any thread. */
SCREE_API void scree_rows_free(scree_rows *rows);

/*
 * An iterator over range r (bounds copied), reading pages of rows ahead
 * as it goes. 0 and *ret, or an error as scree_scan's (-EINVAL for a
 * NULL t, r or ret). It holds no engine resources between pages: keep it
 * as long as you like.
 */
SCREE_API int scree_iter_new(scree_table *t, const scree_range *r, scree_iter **ret);
/* Moves to the next row (the first on the first call): 1 (a row), 0 (the
 * end), or an error (the iterator is then at its end; -EINVAL for a NULL
 * it). */
SCREE_API int scree_iter_next(scree_iter *it);
/* The current row's key and value, valid until the next scree_iter_next
 * or scree_iter_free; NULL before the first row, after the last, or for
 * a NULL it. ret_len may be NULL. */
SCREE_API const void *scree_iter_key(const scree_iter *it, size_t *ret_len);
SCREE_API const void *scree_iter_value(const scree_iter *it, size_t *ret_len);
/* Accepts NULL. */
SCREE_API void scree_iter_free(scree_iter *it);

/* Deletes every row of range r (reverse ignored). Returns 0 and
 * *ret_deleted (may be NULL): the rows deleted; errors as scree_scan's
 * and the writes' (-EINVAL for a NULL t or r). Not atomic: a failure
 * leaves a prefix deleted. */
SCREE_API int scree_delete_range(scree_table *t, const scree_range *r, uint64_t *ret_deleted);

/* ---- asynchronous calls and completion queues ----
 *
 * Each *_async call copies its arguments, queues the operation and
 * returns 0 at once (or an error, and then no completion comes). Its
 * completion -- the same result the synchronous form would return, and
 * the caller's tag -- arrives in the queue later, in any order. A queue
 * is for one thread at a time; operations of several threads need a
 * queue each (as many queues as you like). The asynchronous forms may be
 * called from any thread, shard threads included. Each refuses a NULL q
 * (or the pointers its synchronous form refuses) with -EINVAL; tag may
 * be NULL. Every operation that
 * waits for the shards has one; scree_list and scree_table_open read the
 * caller's catalog snapshot and never wait; scree_table_describe and the
 * counters (scree_stat, scree_stats) ask every shard and are synchronous
 * only.
 */
enum scree_op {
        SCREE_OP_PUT = 1,
        SCREE_OP_DEL,
        SCREE_OP_GET,
        SCREE_OP_UPDATE,
        SCREE_OP_WRITE,
        SCREE_OP_SCAN,
        SCREE_OP_DELETE_RANGE,
        SCREE_OP_MKDIR,
        SCREE_OP_RMDIR,
        SCREE_OP_TABLE_CREATE,
        SCREE_OP_TABLE_DROP,
        SCREE_OP_FLUSH,
        SCREE_OP_COMPACT,
};

typedef struct scree_completion {
        void *tag;                      /* the caller's, as passed */
        enum scree_op op;
        int res;                        /* the synchronous form's return value */
        /* SCREE_OP_GET with res 0: the value (the caller frees it). */
        scree_value *value;
        /* SCREE_OP_SCAN with res 0: the page (the caller frees it). */
        scree_rows *rows;
        /* SCREE_OP_DELETE_RANGE: rows deleted. */
        uint64_t count;
        /* res < 0: what scree_last_error would have said, or ""; owned by
         * the queue, valid until its next poll or wait. */
        const char *message;
} scree_completion;

/* A new queue. 0 and *ret, -ENOMEM, -EMFILE (no descriptor for its
 * eventfd), -EINVAL (a NULL db or ret). */
SCREE_API int scree_cq_new(scree_db *db, scree_cq **ret);
/*
 * Frees q. Operations still in flight are waited for and their results
 * dropped (values and pages freed). Accepts NULL. Not from a shard thread
 * while operations are in flight.
 */
SCREE_API void scree_cq_free(scree_cq *q);

/* A descriptor that polls readable while completions wait (an eventfd).
 * Once it is readable, call scree_cq_poll until it returns fewer than
 * max: the queue then rearms it. Valid until scree_cq_free. -EINVAL for
 * a NULL q. */
SCREE_API int scree_cq_fd(const scree_cq *q);

/* Moves up to max waiting completions into out; returns how many (0:
 * none waits), or -EINVAL (a NULL q or out, max < 1). Never blocks. */
SCREE_API int scree_cq_poll(scree_cq *q, scree_completion *out, int max);

/* As scree_cq_poll, but waits up to timeout_ms (-1: forever) for at least
 * one; returns 0 at once when no operation is in flight. Not from a
 * shard thread (-SCREE_EONSHARD). */
SCREE_API int scree_cq_wait(scree_cq *q, scree_completion *out, int max, int timeout_ms);

/* Operations queued on q whose completion was not yet polled; 0 for a
 * NULL q. */
SCREE_API uint64_t scree_cq_pending(const scree_cq *q);

SCREE_API int scree_put_async(scree_cq *q, scree_table *t, const void *key, size_t key_len,
                              const void *value, size_t value_len, uint64_t ttl_ms, void *tag);
SCREE_API int scree_del_async(scree_cq *q, scree_table *t, const void *key, size_t key_len,
                              void *tag);
SCREE_API int scree_get_async(scree_cq *q, scree_table *t, const void *key, size_t key_len,
                              void *tag);
/* fn and arg as scree_update's; arg (and what fn points out->value at)
 * must stay valid until the completion. */
SCREE_API int scree_update_async(scree_cq *q, scree_table *t, const void *key, size_t key_len,
                                 scree_update_fn fn, void *arg, void *tag);
/* b is copied: reuse it at once. */
SCREE_API int scree_write_async(scree_cq *q, const scree_batch *b, void *tag);
SCREE_API int scree_scan_async(scree_cq *q, scree_table *t, const scree_range *r,
                               const void *cursor, size_t cursor_len, uint32_t limit, void *tag);
SCREE_API int scree_delete_range_async(scree_cq *q, scree_table *t, const scree_range *r,
                                       void *tag);
/* The catalog changes and the maintenance, as their synchronous forms
 * (path and spec copied). */
SCREE_API int scree_mkdir_async(scree_cq *q, const char *path, void *tag);
SCREE_API int scree_rmdir_async(scree_cq *q, const char *path, void *tag);
SCREE_API int scree_table_create_async(scree_cq *q, const scree_table_spec *spec, void *tag);
SCREE_API int scree_table_drop_async(scree_cq *q, const char *path, void *tag);
SCREE_API int scree_flush_async(scree_cq *q, void *tag);
SCREE_API int scree_compact_async(scree_cq *q, void *tag);

/* ---- statistics and administration ---- */

/*
 * The engine's counters summed over the shards (names as the server's
 * INFO and metrics: writes, gets, flushes, compactions, cache_hits,
 * memtable_bytes, ...). scree_stat: 0 and *ret, or -SCREE_ENOTFOUND (no
 * such counter), -EINVAL (a NULL db, name or ret). scree_stats:
 * fn(arg, name, value) for each, in a fixed order; -EINVAL for a NULL db
 * or fn. Not from a shard thread.
 */
SCREE_API int scree_stat(scree_db *db, const char *name, uint64_t *ret);
SCREE_API int scree_stats(scree_db *db, void (*fn)(void *arg, const char *name, uint64_t value),
                          void *arg);

/* Writes every memtable to SSTables (the commit log can then be
 * recycled). 0 or the first shard's error; -EINVAL for a NULL db. */
SCREE_API int scree_flush(scree_db *db);
/* A major compaction of every tablet: tombstones and expired rows are
 * dropped for good. 0 or the first error; -EINVAL for a NULL db. */
SCREE_API int scree_compact(scree_db *db);

#ifdef __cplusplus
}
#endif
#endif
