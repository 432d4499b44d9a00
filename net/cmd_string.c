/* SPDX-License-Identifier: Apache-2.0 */
/*
 * String commands: GET, SET and its family, INCR and its family, APPEND,
 * STRLEN, and the fan-out MGET and MSET. Each single-key handler runs on
 * the shard owning its key (cmd.h); those that read before they write use
 * the engine's read-modify-write, so no other write to the key lands in
 * between. Values are bounded by --max-value-bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "net/cmd.h"
#include "net/server.h"

static const char E_OVERFLOW[] = "increment or decrement would overflow";
static const char E_TOO_LONG[] = "value too long";     /* marker: the reply names the limit */

static void reply_too_long(struct net_req *req)
{
        net_resp_add_errorf(req->out, "ERR value too long (max %llu bytes)",
                            (unsigned long long)req->exec->srv->max_value_bytes);
}

static bool value_ok(struct net_req *req, const struct net_arg *v)
{
        if (v->len <= req->exec->srv->max_value_bytes)
                return true;
        reply_too_long(req);
        return false;
}

static void reply_err(struct net_req *req, int res)
{
        if (req->err == E_TOO_LONG)
                reply_too_long(req);
        else
                net_reply_engine_err(req, res);
}

/* ---- GET, STRLEN ---- */

static void get_then(struct net_req *req, int res)
{
        if (res == 0)
                net_resp_add_bulk(req->out, req->u.g.value, req->u.g.value_len);
        else if (res == -SCREE_ENOTFOUND)
                net_resp_add_null(req->out);
        else
                net_reply_engine_err(req, res);
}

int net_cmd_get(struct net_req *req)
{
        return net_req_get(req, req->argv[1].ptr, req->argv[1].len, get_then);
}

static void strlen_then(struct net_req *req, int res)
{
        if (res == 0 || res == -SCREE_ENOTFOUND)
                net_resp_add_int(req->out, res == 0 ? req->u.g.value_len : 0);
        else
                net_reply_engine_err(req, res);
}

int net_cmd_strlen(struct net_req *req)
{
        return net_req_get(req, req->argv[1].ptr, req->argv[1].len, strlen_then);
}

/* ---- SET and family ---- */

static void ok_then(struct net_req *req, int res)
{
        if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_simple(req->out, "OK", 2);
}

/* The RMW step of SET with NX/XX/GET/KEEPTTL, SETNX and GETSET: the new
 * value is argv[2]. */
static int set_rmw(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct net_req *req = arg;
        uint32_t f = req->flags;

        if ((f & NET_SET_GET) && net_req_keep_old(req, cur) < 0)
                return -ENOMEM;
        if (((f & NET_SET_NX) && cur) || ((f & NET_SET_XX) && !cur))
                return 0;
        out->kind = ENG_MUT_PUT;
        out->value = req->argv[2].ptr;
        out->value_len = (uint32_t)req->argv[2].len;
        out->expiry_ms = (f & NET_SET_KEEPTTL) && cur ? cur->expiry_ms : req->expiry_ms;
        return 1;
}

static void set_then(struct net_req *req, int res)
{
        if (res < 0)
                net_reply_engine_err(req, res);
        else if ((req->flags & NET_SET_GET) && req->have_old)
                net_resp_add_bulk(req->out, req->scratch, req->scratch_len);
        else if ((req->flags & NET_SET_GET) || res == 0)
                net_resp_add_null(req->out);
        else
                net_resp_add_simple(req->out, "OK", 2);
}

static int put(struct net_req *req, uint64_t expiry_ms, net_req_then_fn then)
{
        req->mut = (struct eng_mutation){
                .kind = ENG_MUT_PUT,
                .table = req->table,
                .key = req->argv[1].ptr,
                .key_len = (uint32_t)req->argv[1].len,
                .value = req->argv[2].ptr,
                .value_len = (uint32_t)req->argv[2].len,
                .expiry_ms = expiry_ms,
        };
        return net_req_write(req, &req->mut, 1, then);
}

int net_cmd_set(struct net_req *req)
{
        struct net_set_opts o;
        const char *err;

        if (!value_ok(req, &req->argv[2]))
                return NET_CMD_DONE;
        /* The clock only for options (EX, PX): plain SETs are the hot path. */
        err = net_set_opts_parse(req->argv + 3, req->argc - 3, req->argc > 3 ? net_now_ms() : 0,
                                 &o);
        if (err) {
                net_resp_add_errorf(req->out, "ERR %s", err);
                return NET_CMD_DONE;
        }
        req->flags = o.flags;
        req->expiry_ms = (o.flags & NET_SET_EXPIRY) ? o.expiry_ms : 0;
        if (!(o.flags & (NET_SET_NX | NET_SET_XX | NET_SET_GET | NET_SET_KEEPTTL)))
                return put(req, req->expiry_ms, ok_then);
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, set_rmw, set_then);
}

int net_cmd_setnx(struct net_req *req)
{
        if (!value_ok(req, &req->argv[2]))
                return NET_CMD_DONE;
        req->flags = NET_SET_NX;
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, set_rmw, net_then_int);
}

int net_cmd_getset(struct net_req *req)
{
        if (!value_ok(req, &req->argv[2]))
                return NET_CMD_DONE;
        req->flags = NET_SET_GET;
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, set_rmw, set_then);
}

/* SETEX key seconds value, PSETEX key ms value. */
int net_cmd_setex(struct net_req *req)
{
        bool ms = req->def->name[0] == 'p';
        struct net_arg when = req->argv[2];
        uint64_t expiry;
        int64_t v;

        if (net_arg_i64(&when, &v) < 0) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_NOT_INT);
                return NET_CMD_DONE;
        }
        if (v <= 0 || net_expiry_ms(v, ms ? 1 : 1000, false, net_now_ms(), &expiry) < 0) {
                net_resp_add_errorf(req->out, "ERR invalid expire time in '%s' command",
                                    req->def->name);
                return NET_CMD_DONE;
        }
        /* The value is the third argument: make it argv[2] for put(). */
        req->argv[2] = req->argv[3];
        if (!value_ok(req, &req->argv[2]))
                return NET_CMD_DONE;
        return put(req, expiry, ok_then);
}

static int getdel_rmw(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct net_req *req = arg;
        int r = net_req_keep_old(req, cur);

        if (r <= 0)
                return r;
        out->kind = ENG_MUT_DEL;
        return 1;
}

int net_cmd_getdel(struct net_req *req)
{
        req->flags = NET_SET_GET;
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, getdel_rmw, set_then);
}

/* ---- INCR family, APPEND ---- */

static int incr_rmw(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct net_req *req = arg;
        int64_t v = 0, delta = req->ival;

        if (cur) {
                struct net_arg a = { (const char *)cur->value, cur->value_len };

                if (net_arg_i64(&a, &v) < 0) {
                        req->err = NET_ERR_NOT_INT;
                        return -EINVAL;
                }
        }
        if (__builtin_add_overflow(v, delta, &v)) {
                req->err = E_OVERFLOW;
                return -ERANGE;
        }
        req->ival = v;
        out->kind = ENG_MUT_PUT;
        out->value = req->num;
        out->value_len = (uint32_t)net_fmt_i64(req->num, v);
        out->expiry_ms = cur ? cur->expiry_ms : 0;
        return 1;
}

static void int_then(struct net_req *req, int res)
{
        if (res < 0)
                reply_err(req, res);
        else
                net_resp_add_int(req->out, req->ival);
}

int net_cmd_incr(struct net_req *req)
{
        const char *name = req->def->name;
        bool by = req->argc == 3, decr = name[0] == 'd';
        int64_t delta = 1;

        if (by && net_arg_i64(&req->argv[2], &delta) < 0) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_NOT_INT);
                return NET_CMD_DONE;
        }
        if (decr && delta == INT64_MIN) {
                net_resp_add_errorf(req->out, "ERR decrement would overflow");
                return NET_CMD_DONE;
        }
        req->ival = decr ? -delta : delta;
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, incr_rmw, int_then);
}

static int append_rmw(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct net_req *req = arg;
        const struct net_arg *v = &req->argv[2];
        size_t old = cur ? cur->value_len : 0;
        uint8_t *buf;

        if (old + v->len > req->exec->srv->max_value_bytes) {
                req->err = NET_ERR_STRING_MAX;
                return -E2BIG;
        }
        buf = malloc(old + v->len + 1);
        if (!buf)
                return -ENOMEM;
        if (old)
                memcpy(buf, cur->value, old);
        memcpy(buf + old, v->ptr, v->len);
        free(req->scratch);
        req->scratch = buf;
        req->ival = (int64_t)(old + v->len);
        out->kind = ENG_MUT_PUT;
        out->value = buf;
        out->value_len = (uint32_t)(old + v->len);
        out->expiry_ms = cur ? cur->expiry_ms : 0;
        return 1;
}

int net_cmd_append(struct net_req *req)
{
        /* Too long whatever the key holds: the same error as a result too
         * long (append_rmw), Redis's. */
        if (req->argv[2].len > req->exec->srv->max_value_bytes) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_STRING_MAX);
                return NET_CMD_DONE;
        }
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, append_rmw, int_then);
}

/* ---- MGET, MSET ---- */

static void mget_gather(struct net_req *req)
{
        net_resp_add_array(req->out, req->n_children);
        for (uint32_t i = 0; i < req->n_children; i++)
                net_out_move(req->out, &req->children[i]->own);
}

int net_cmd_mget(struct net_req *req)
{
        if (net_req_per_key(req, &net_cmd_def_get, 1, 2) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        return net_req_fan_out(req, mget_gather);
}

static void mset_gather(struct net_req *req)
{
        for (uint32_t i = 0; i < req->n_children; i++)
                if (net_child_error(req, req->children[i]))
                        return;
        net_resp_add_simple(req->out, "OK", 2);
}

/* MSET's and MSETNX's pairs are whole and their values within the limit;
 * otherwise replies the error and returns false. */
static bool pairs_ok(struct net_req *req, const char *name)
{
        if (req->argc % 2 == 0) {
                net_resp_add_errorf(req->out, "ERR wrong number of arguments for '%s' command", name);
                return false;
        }
        for (size_t i = 2; i < req->argc; i += 2)
                if (!value_ok(req, &req->argv[i]))
                        return false;
        return true;
}

/* Starts one SET child per pair, gathered by gather. */
static int set_pairs(struct net_req *req, void (*gather)(struct net_req *req))
{
        if (net_req_per_key(req, &net_cmd_def_set, 2, 3) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        return net_req_fan_out(req, gather);
}

int net_cmd_mset(struct net_req *req)
{
        if (!pairs_ok(req, "mset"))
                return NET_CMD_DONE;
        return set_pairs(req, mset_gather);
}

/* MSETNX: every key is checked, then every pair written, all under the
 * command's lock set (txn.h), so no other command sees or writes a key
 * in between. */
static void msetnx_set_gather(struct net_req *req)
{
        for (uint32_t i = 0; i < req->n_children; i++)
                if (net_child_error(req, req->children[i]))
                        return;
        net_resp_add_int(req->out, 1);
}

static void msetnx_exists_gather(struct net_req *req)
{
        int64_t n = 0;

        for (uint32_t i = 0; i < req->n_children; i++) {
                if (net_child_error(req, req->children[i]))
                        return;
                n += req->children[i]->ival;
        }
        if (n) {
                net_resp_add_int(req->out, 0);
                return;
        }
        net_req_children_drop(req);
        set_pairs(req, msetnx_set_gather);     /* a second round; or replies ENOMEM */
}

int net_cmd_msetnx(struct net_req *req)
{
        if (!pairs_ok(req, "msetnx"))
                return NET_CMD_DONE;
        if (net_req_per_key(req, &net_cmd_def_exists1, 2, 2) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        return net_req_fan_out(req, msetnx_exists_gather);
}
