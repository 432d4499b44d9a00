/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper: runs a program with io_uring_setup(2) made to fail with EPERM
 * by a seccomp filter, the way a container's default profile blocks it.
 * Usage: no_uring PROGRAM [ARGS...]
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

        if (argc < 2) {
                fprintf(stderr, "usage: no_uring PROGRAM [ARGS...]\n");
                return 2;
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
                fprintf(stderr, "no_uring: seccomp: %s\n", strerror(errno));
                return 77;
        }
        execv(argv[1], argv + 1);
        fprintf(stderr, "no_uring: exec %s: %s\n", argv[1], strerror(errno));
        return 127;
}
