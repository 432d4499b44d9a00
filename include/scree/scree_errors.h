/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree error codes.
 *
 * Every function in scree returns 0 on success, a documented count > 0, or a
 * negative error: either -errno or -SCREE_Exxx from the list below. Project
 * codes live in 9000..9999, clear of every errno value, so one int carries
 * both without ambiguity (the LMDB idea). The list is an X-macro so that the
 * enum and scree_strerror() can never drift apart (the libuv idea).
 *
 * SCREE_EFULL means "retry later" (a queue or ring is full): callers handle it,
 * it is never logged and never tears anything down. SCREE_ERATELIMIT is an
 * operation refused, not done, because its partition went over its table's
 * per-partition rate limit (a client's "slow down"; engine/shard.h).
 */
#ifndef SCREE_ERRORS_H
#define SCREE_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

#ifndef SCREE_API
#define SCREE_API __attribute__((visibility("default")))
#endif

#define SCREE_ERRNO_MAP(X)                                                        \
        X(ENOTFOUND, 9001, "key or object not found")                             \
        X(ECORRUPT, 9002, "corrupt data (checksum or format mismatch)")           \
        X(EPROTO, 9003, "protocol error")                                         \
        X(ESHUTDOWN, 9004, "shutting down")                                       \
        X(EFULL, 9005, "queue or ring full, retry later")                         \
        X(EUNSUPPORTED, 9006, "required kernel feature is not available")         \
        X(ERATELIMIT, 9007, "per-partition rate limit exceeded")                  \
        X(EMOVED, 9010, "the key's tablet is on another shard now")               \
        X(EONSHARD, 9011, "a blocking call from a shard thread (use the asynchronous form)")

enum scree_errno {
#define SCREE_ERRNO_ENUM(name, value, text) SCREE_##name = value,
        SCREE_ERRNO_MAP(SCREE_ERRNO_ENUM)
#undef SCREE_ERRNO_ENUM
        SCREE_ERRNO_FIRST = 9000,
        SCREE_ERRNO_LAST = 9999,
};

/*
 * Text for an error returned by scree: accepts err or -err, project codes and
 * errno values alike. Returns a static string; never NULL. Any thread.
 */
SCREE_API const char *scree_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
