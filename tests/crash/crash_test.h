/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kill -9 crash test (docs/testing.md): one program, two roles.
 *
 *   crash_test writer DIR --seed S --round R [--inflight W] [--periodic-ms N] [--check]
 *     opens the shard in DIR on the real file layer, reads every key of the
 *     workload back and prints it ("S key ver|-"; "G key why" for a value
 *     that is not one the workload wrote), prints "R", then keeps W writes
 *     in flight and prints one line per acknowledged write ("A index letter
 *     key0 key1") until it is killed (or 60 s pass: then it closes the
 *     shard and exits 0). --check: read back only, then close. Each line
 *     goes out in one write(2), so what the driver reads was acknowledged.
 *
 *   crash_test run [--dir DIR] [--rounds N] [--seed S] [--max-ms M] ...
 *     starts the writer round after round on the same directory, SIGKILLs
 *     it at a seeded random moment and checks what the next writer reads
 *     back against what was acknowledged (crash_model.h).
 *
 * Exit status: 0 good, 1 a violation (the message says which key and
 * write), 2 usage or set-up error, 3 an engine call failed in the writer.
 */
#ifndef SCREE_TESTS_CRASH_TEST_H
#define SCREE_TESTS_CRASH_TEST_H

#include <stdbool.h>
#include <stdint.h>

#define CRASH_EXIT_VIOLATION 1
#define CRASH_EXIT_USAGE 2
#define CRASH_EXIT_ENGINE 3

/* The shard's options in the test: small, so flushes, log segment removal
 * and compactions happen within a few hundred milliseconds. */
#define CRASH_MEMTABLE_BUDGET ((size_t)2 << 20)
#define CRASH_SEGMENT_BYTES (UINT64_C(1) << 20)
#define CRASH_CACHE_BYTES ((size_t)4 << 20)
#define CRASH_DEFAULT_INFLIGHT 32u
#define CRASH_WRITER_MAX_NS (60 * UINT64_C(1000000000))

int crash_writer_main(int argc, char **argv);
int crash_driver_main(int argc, char **argv);

/* Parses "--name value" options: for each argv[i] equal to "--" name, the
 * next argument as an unsigned number into *ret. Flags (no value) are
 * found with crash_arg_flag. Returns false on a malformed number. */
bool crash_arg_u64(int argc, char **argv, const char *name, uint64_t *ret);
bool crash_arg_flag(int argc, char **argv, const char *name);
/* The value of "--name value", or NULL. */
const char *crash_arg_str(int argc, char **argv, const char *name);

#endif
