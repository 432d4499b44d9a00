/* SPDX-License-Identifier: Apache-2.0 */
/*
 * More string commands: GETRANGE, SETRANGE, GETEX and INCRBYFLOAT. Each
 * runs on the shard owning its key; SETRANGE, INCRBYFLOAT and GETEX with
 * an option are read-modify-writes (no other write to the key lands in
 * between) that keep the key's TTL unless told otherwise. The number and
 * index rules are in strval.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "net/cmd.h"
#include "net/server.h"
#include "net/strval.h"

static const char E_FLOAT[] = "value is not a valid float";
static const char E_NAN[] = "increment would produce NaN or Infinity";

/* An RMW's new value buf (heap, len bytes; taken: freed with the
 * request's scratch), keeping the key's TTL. Returns 1 (write it). */
static int put_taken(struct net_req *req, uint8_t *buf, size_t len, const struct eng_get *cur,
                     struct eng_mutation *out)
{
        free(req->scratch);
        req->scratch = buf;
        req->scratch_len = len;
        out->kind = ENG_MUT_PUT;
        out->value = buf;
        out->value_len = (uint32_t)len;
        out->expiry_ms = cur ? cur->expiry_ms : 0;
        return 1;
}

/* ---- GETRANGE ---- */

static void getrange_then(struct net_req *req, int res)
{
        size_t off, n;

        if (res < 0 && res != -SCREE_ENOTFOUND) {
                net_reply_engine_err(req, res);
                return;
        }
        if (res == 0 && net_range_clamp(req->ival, (int64_t)req->expiry_ms, req->u.g.value_len,
                                        &off, &n))
                net_resp_add_bulk(req->out, req->u.g.value + off, n);
        else
                net_resp_add_bulk(req->out, "", 0);
}

int net_cmd_getrange(struct net_req *req)
{
        int64_t start, end;

        if (net_arg_i64(&req->argv[2], &start) < 0 || net_arg_i64(&req->argv[3], &end) < 0) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_NOT_INT);
                return NET_CMD_DONE;
        }
        req->ival = start;
        req->expiry_ms = (uint64_t)end;
        return net_req_get(req, req->argv[1].ptr, req->argv[1].len, getrange_then);
}

/* ---- SETRANGE ---- */

static int setrange_rmw(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct net_req *req = arg;
        const struct net_arg *v = &req->argv[3];
        size_t off = (size_t)req->expiry_ms, old = cur ? cur->value_len : 0;
        size_t len = off + v->len > old ? off + v->len : old;
        uint8_t *buf;

        if (v->len == 0) {
                req->ival = (int64_t)old;       /* nothing to write, not even a new key */
                return 0;
        }
        buf = calloc(1, len);
        if (!buf)
                return -ENOMEM;
        if (old)
                memcpy(buf, cur->value, old);
        memcpy(buf + off, v->ptr, v->len);
        req->ival = (int64_t)len;
        return put_taken(req, buf, len, cur, out);
}

static void int_then(struct net_req *req, int res)
{
        if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_int(req->out, req->ival);
}

int net_cmd_setrange(struct net_req *req)
{
        uint64_t max = req->exec->srv->max_value_bytes;
        int64_t off;

        if (net_arg_i64(&req->argv[2], &off) < 0) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_NOT_INT);
                return NET_CMD_DONE;
        }
        if (off < 0) {
                net_resp_add_errorf(req->out, "ERR offset is out of range");
                return NET_CMD_DONE;
        }
        /* As Redis: an empty value writes nothing, so it is never too long. */
        if (req->argv[3].len && (uint64_t)off + req->argv[3].len > max) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_STRING_MAX);
                return NET_CMD_DONE;
        }
        req->expiry_ms = (uint64_t)off;
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, setrange_rmw, int_then);
}

/* ---- GETEX ---- */

#define GETEX_SET (1u << 0)             /* an option changes the expiry */

/* GETEX's options: none, one of EX/PX/EXAT/PXAT n, or PERSIST. NULL or
 * the error text; req->flags and req->expiry_ms set. */
static const char *getex_opts(struct net_req *req)
{
        const struct net_arg *a = &req->argv[2];
        bool ex, px, exat, pxat;
        int64_t v;

        req->flags = 0;
        if (req->argc == 2)
                return NULL;                    /* a plain GET: argv[2] does not exist */
        ex = net_arg_is(a, "ex");
        px = net_arg_is(a, "px");
        exat = net_arg_is(a, "exat");
        pxat = net_arg_is(a, "pxat");
        if (req->argc == 3 && net_arg_is(a, "persist")) {
                req->flags = GETEX_SET;
                req->expiry_ms = 0;
                return NULL;
        }
        if (req->argc != 4 || !(ex || px || exat || pxat))
                return NET_ERR_SYNTAX;
        if (net_arg_i64(&req->argv[3], &v) < 0)
                return NET_ERR_NOT_INT;
        if (v <= 0 || net_expiry_ms(v, ex || exat ? 1000 : 1, exat || pxat, net_now_ms(),
                                    &req->expiry_ms) < 0)
                return "invalid expire time in 'getex' command";
        if (req->expiry_ms == 0)
                req->expiry_ms = 1;
        req->flags = GETEX_SET;
        return NULL;
}

static int getex_rmw(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct net_req *req = arg;
        int r = net_req_keep_old(req, cur);

        if (r <= 0)
                return r;
        if (req->expiry_ms == cur->expiry_ms)
                return 0;
        if (req->expiry_ms != 0 && req->expiry_ms <= net_now_ms()) {
                out->kind = ENG_MUT_DEL;
                return 1;
        }
        out->kind = ENG_MUT_PUT;
        out->value = req->scratch;
        out->value_len = cur->value_len;
        out->expiry_ms = req->expiry_ms;
        return 1;
}

static void getex_then(struct net_req *req, int res)
{
        if (res < 0 && res != -SCREE_ENOTFOUND)
                net_reply_engine_err(req, res);
        else if (req->have_old)
                net_resp_add_bulk(req->out, req->scratch, req->scratch_len);
        else if (res == 0 && !(req->flags & GETEX_SET))
                net_resp_add_bulk(req->out, req->u.g.value, req->u.g.value_len);
        else
                net_resp_add_null(req->out);
}

int net_cmd_getex(struct net_req *req)
{
        const char *err = getex_opts(req);

        if (err) {
                net_resp_add_errorf(req->out, "ERR %s", err);
                return NET_CMD_DONE;
        }
        if (!(req->flags & GETEX_SET))
                return net_req_get(req, req->argv[1].ptr, req->argv[1].len, getex_then);
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, getex_rmw, getex_then);
}

/* ---- INCRBYFLOAT ---- */

static int incrbyfloat_rmw(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct net_req *req = arg;
        long double v = 0, by;
        char *text;
        int n;

        if (cur && net_ld_parse((const char *)cur->value, cur->value_len, &v) < 0) {
                req->err = E_FLOAT;
                return -EINVAL;
        }
        net_ld_parse(req->argv[2].ptr, req->argv[2].len, &by);     /* checked before */
        v += by;
        text = malloc(NET_LD_MAX);
        if (!text)
                return -ENOMEM;
        n = net_ld_format(text, v);
        if (n < 0) {
                free(text);
                req->err = E_NAN;
                return -ERANGE;
        }
        return put_taken(req, (uint8_t *)text, (size_t)n, cur, out);
}

static void float_then(struct net_req *req, int res)
{
        if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_bulk(req->out, req->scratch, req->scratch_len);
}

int net_cmd_incrbyfloat(struct net_req *req)
{
        long double by;

        if (net_ld_parse(req->argv[2].ptr, req->argv[2].len, &by) < 0) {
                net_resp_add_errorf(req->out, "ERR %s", E_FLOAT);
                return NET_CMD_DONE;
        }
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, incrbyfloat_rmw, float_then);
}
