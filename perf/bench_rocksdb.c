/* SPDX-License-Identifier: Apache-2.0 */
/* scree-bench's RocksDB engine; see bench_rocksdb.h. (Not yet written.) */
#include "perf/bench_rocksdb.h"

int bench_rocksdb_new(const struct bench_opts *o, struct bench_engine **ret)
{
        (void)o;
        (void)ret;
        return -ENOTSUP;
}
