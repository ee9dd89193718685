/*
 * no_uring [-b SYSCALL]... COMMAND [ARG]...: run COMMAND under a seccomp filter that answers io_uring_setup,
 * io_uring_enter and io_uring_register with EPERM, as the default profiles of Docker (25.0 on), containerd
 * (2.0 on, RuntimeDefault) and Podman do; each -b adds another call answered the same way (epoll_pwait2, to
 * stand for a profile older than it). Everything else is allowed. The filter is inherited by COMMAND's
 * children and threads, and cannot be lifted.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int deny(scmp_filter_ctx ctx, const char *name)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) {
        fprintf(stderr, "no_uring: unknown system call \"%s\"\n", name);
        return -1;
    }
    int err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (err < 0) {
        fprintf(stderr, "no_uring: cannot deny %s: %s\n", name, strerror(-err));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        fprintf(stderr, "no_uring: seccomp_init failed\n");
        return 125;
    }
    static const char *const uring[] = {"io_uring_setup", "io_uring_enter", "io_uring_register"};
    for (size_t i = 0; i < sizeof uring / sizeof uring[0]; i++)
        if (deny(ctx, uring[i]) < 0)
            return 125;
    int i = 1;
    for (; i + 1 < argc && strcmp(argv[i], "-b") == 0; i += 2)
        if (deny(ctx, argv[i + 1]) < 0)
            return 125;
    if (i >= argc) {
        fprintf(stderr, "usage: no_uring [-b SYSCALL]... COMMAND [ARG]...\n");
        return 125;
    }
    int err = seccomp_load(ctx);
    seccomp_release(ctx);
    if (err < 0) {
        fprintf(stderr, "no_uring: seccomp_load: %s\n", strerror(-err));
        return 125;
    }
    execvp(argv[i], argv + i);
    fprintf(stderr, "no_uring: %s: %s\n", argv[i], strerror(errno));
    return 127;
}
