/*
 * sg_loop: the interface every thread's event loop is used through, the receive buffers and wake-up eventfd
 * that both backends share, and the choice of backend (sg_loop.h).
 */
#include "loop_int.h"

#include <errno.h>
#include <linux/net_tstamp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

const char *sg_io_backend_name(sg_io_backend_t b)
{
    return b == SG_IO_URING ? "io_uring" : b == SG_IO_EPOLL ? "epoll" : "auto";
}

int sg_io_backend_parse(const char *s)
{
    return strcmp(s, "auto") == 0                                  ? SG_IO_AUTO
           : strcmp(s, "io_uring") == 0 || strcmp(s, "uring") == 0 ? SG_IO_URING
           : strcmp(s, "epoll") == 0                               ? SG_IO_EPOLL
                                                                   : -1;
}

int sg_loop_pick(sg_io_backend_t want, char *why, size_t whylen)
{
    if (whylen)
        why[0] = '\0';
    if (want == SG_IO_URING || want == SG_IO_AUTO) {
        int err = sg_uring_probe(why, whylen);
        if (err == 0)
            return SG_IO_URING;
        if (want == SG_IO_URING)
            return err;
    }
    int fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) {
        int err = -errno;
        snprintf(why, whylen, "epoll_create1: %s", sg_strerror(err));
        return err;
    }
    close(fd);
    return SG_IO_EPOLL;
}

int sg_loop_init(sg_loop_t *l, sg_io_backend_t backend, unsigned entries, unsigned buf_count, unsigned buf_size)
{
    memset(l, 0, sizeof(*l));
    l->wake_fd = -1;
    l->spin_ns = 50000;
    sg_loop_clock_sync(l);
    if (buf_count == 0 || (buf_count & (buf_count - 1)) || buf_count > 32768 || buf_size == 0 ||
        (backend != SG_IO_URING && backend != SG_IO_EPOLL))
        return -EINVAL;
    l->buf_count = buf_count;
    l->buf_size = buf_size;
    l->bufs_bytes = (size_t)buf_count * buf_size;
    l->bufs = mmap(NULL, l->bufs_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (l->bufs == MAP_FAILED) {
        l->bufs = NULL;
        return -errno;
    }
    l->wake_fd = eventfd(0, EFD_CLOEXEC | (backend == SG_IO_EPOLL ? EFD_NONBLOCK : 0));
    int err = l->wake_fd < 0 ? -errno : 0;
    if (err == 0)
        err = backend == SG_IO_URING ? sg_uring_init(l, entries) : sg_epoll_init(l);
    if (err < 0) {
        if (l->wake_fd >= 0)
            close(l->wake_fd);
        munmap(l->bufs, l->bufs_bytes);
        l->bufs = NULL;
        l->wake_fd = -1;
        return err;
    }
    l->backend = backend;
    return 0;
}

void sg_loop_destroy(sg_loop_t *l)
{
    if (!l->bufs)
        return;
    if (l->u)
        sg_uring_destroy(l); /* first: it cancels what is in flight, which may still use the buffers */
    if (l->e)
        sg_epoll_destroy(l);
    munmap(l->bufs, l->bufs_bytes);
    close(l->wake_fd);
    l->bufs = NULL;
    l->wake_fd = -1;
}

void sg_loop_send(sg_loop_t *l, sg_op_t *op, int fd, const void *p, size_t n)
{
    if (l->e)
        sg_epoll_send(l, op, fd, p, n);
    else
        sg_uring_send(l, op, fd, p, n);
}

void sg_loop_sendmsg(sg_loop_t *l, sg_op_t *op, int fd, const struct msghdr *msg)
{
    if (l->e)
        sg_epoll_sendmsg(l, op, fd, msg);
    else
        sg_uring_sendmsg(l, op, fd, msg);
}

void sg_loop_connect(sg_loop_t *l, sg_op_t *op, int fd, const struct sockaddr *addr, socklen_t len)
{
    if (l->e)
        sg_epoll_connect(l, op, fd, addr, len);
    else
        sg_uring_connect(l, op, fd, addr, len);
}

void sg_loop_recv(sg_loop_t *l, sg_op_t *op, int fd)
{
    if (l->e)
        sg_epoll_recv(l, op, fd);
    else
        sg_uring_recv(l, op, fd);
}

void sg_loop_accept(sg_loop_t *l, sg_op_t *op, int fd)
{
    if (l->e)
        sg_epoll_accept(l, op, fd);
    else
        sg_uring_accept(l, op, fd);
}

void sg_loop_cancel(sg_loop_t *l, sg_op_t *op, int fd)
{
    if (l->e)
        sg_epoll_cancel(l, op, fd);
    else
        sg_uring_cancel(l, op);
}

void sg_loop_close(sg_loop_t *l, int fd)
{
    if (l->e)
        sg_epoll_forget(l, fd);
    close(fd);
}

int sg_loop_flush(sg_loop_t *l)
{
    return l->e ? 0 : sg_uring_flush(l);
}

void sg_loop_buf_release(sg_loop_t *l, unsigned bid)
{
    if (l->e)
        sg_epoll_buf_release(l, bid);
    else
        sg_uring_buf_release(l, bid);
}

unsigned sg_loop_bufs_live(const sg_loop_t *l)
{
    return l->e ? sg_epoll_bufs_live(l) : sg_uring_bufs_live(l);
}

int sg_loop_run_once(sg_loop_t *l, int64_t deadline_ns)
{
    if (l->before_submit)
        l->before_submit(l->before_submit_arg);
    int n = l->e ? sg_epoll_run_once(l, deadline_ns) : sg_uring_run_once(l, deadline_ns);
    l->turns++;
    if (n > 0)
        l->completions += (uint64_t)n;
    return n;
}

const char *sg_loop_coalesce_method(const sg_loop_t *l)
{
    return l->u && sg_uring_min_wait(l) ? "io_uring_min_wait" : "sleep";
}

void sg_loop_nap(int64_t ns)
{
    int64_t at = sg_now_ns() + ns;
    struct timespec ts = {.tv_sec = at / 1000000000LL, .tv_nsec = at % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

int sg_loop_stamp_socket(int fd)
{
    int v = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &v, sizeof v) < 0 ? -errno : 0;
}

int64_t sg_loop_clock_sync(sg_loop_t *l)
{
    /* the realtime read between two monotonic ones, against their midpoint: a few tens of ns of uncertainty */
    struct timespec m1, rt, m2;
    clock_gettime(CLOCK_MONOTONIC, &m1);
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &m2);
    int64_t mid = ((int64_t)m1.tv_sec * 1000000000LL + m1.tv_nsec + (int64_t)m2.tv_sec * 1000000000LL + m2.tv_nsec) / 2;
    int64_t off = (int64_t)rt.tv_sec * 1000000000LL + rt.tv_nsec - mid;
    int64_t moved = l->rt_off_ns ? off - l->rt_off_ns : 0;
    l->rt_off_ns = off;
    return moved < 0 ? -moved : moved;
}

void sg_loop_wake(sg_loop_t *l)
{
    uint64_t one = 1;
    ssize_t r = write(l->wake_fd, &one, sizeof(one));
    (void)r; /* the counter only saturates when the owner is not reading: it is awake anyway */
}
