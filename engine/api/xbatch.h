/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writing a batch, on one shard or across several (two-phase commit); see
 * xbatch.c.
 */
#ifndef SCREE_ENGINE_API_XBATCH_H
#define SCREE_ENGINE_API_XBATCH_H

#include "engine/api/req.h"

struct api_xbatch;

/* What -EIO from a batch across shards means. */
#define API_DECIDED_MSG "the batch is decided but a shard could not apply its part for 10 s " \
        "(a full disk?): it is applied once the database is next opened, and its rows wait"

/* A batch of n mutations (owner[i]: the shard of m[i]); everything is
 * copied. 0 and *ret, or -ENOMEM. Any thread. */
int api_xbatch_new(const struct eng_mutation *m, const unsigned *owner, uint32_t n,
                   struct api_xbatch **ret);

/* Starts x on the shards with rq (its db set; rq->state becomes x): the
 * outcome completes waiter (a synchronous caller's one-shot event) or,
 * waiter NULL, goes into rq->cq. 0, or -SCREE_ESHUTDOWN (nothing sent). */
int api_xbatch_start(struct api_req *rq, struct api_xbatch *x, struct rx_alien_req *waiter);

/* Accepts NULL. */
void api_xbatch_free(struct api_xbatch *x);

#endif
