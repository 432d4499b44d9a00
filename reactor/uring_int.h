/* SPDX-License-Identifier: Apache-2.0 */
/* The ring wrapper shared by uring.c and io.c, the two files that include liburing. */
#ifndef SCREE_REACTOR_URING_INT_H
#define SCREE_REACTOR_URING_INT_H

#include <liburing.h>

struct rx_uring {
        struct io_uring ring;
        unsigned in_flight;
};

#endif
