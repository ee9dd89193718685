/*
 * Between sg_loop (loop.c: the interface, the buffers and the wake-up eventfd, shared) and its two backends
 * (loop_uring.c, loop_epoll.c). Each backend keeps its own state behind l->u or l->e.
 */
#ifndef SG_LOOP_INT_H
#define SG_LOOP_INT_H

#include "sg_loop.h"

#include <string.h>

/* io_uring */
int sg_uring_probe(char *why, size_t whylen);
int sg_uring_init(sg_loop_t *l, unsigned entries);
void sg_uring_destroy(sg_loop_t *l);
void sg_uring_send(sg_loop_t *l, sg_op_t *op, int fd, const void *p, size_t n);
void sg_uring_sendmsg(sg_loop_t *l, sg_op_t *op, int fd, const struct msghdr *msg);
void sg_uring_connect(sg_loop_t *l, sg_op_t *op, int fd, const struct sockaddr *addr, socklen_t len);
void sg_uring_recv(sg_loop_t *l, sg_op_t *op, int fd);
void sg_uring_accept(sg_loop_t *l, sg_op_t *op, int fd);
void sg_uring_cancel(sg_loop_t *l, sg_op_t *op);
int sg_uring_flush(sg_loop_t *l);
void sg_uring_buf_release(sg_loop_t *l, unsigned bid);
unsigned sg_uring_bufs_live(const sg_loop_t *l);
int sg_uring_run_once(sg_loop_t *l, int64_t deadline_ns);
bool sg_uring_min_wait(const sg_loop_t *l);
/* Tests: coalesce by the sleep fallback (off) even where the kernel has the minimum wait (on: where it has it). */
void sg_uring_set_min_wait(sg_loop_t *l, bool on);

/* epoll */
int sg_epoll_init(sg_loop_t *l);
void sg_epoll_destroy(sg_loop_t *l);
void sg_epoll_send(sg_loop_t *l, sg_op_t *op, int fd, const void *p, size_t n);
void sg_epoll_sendmsg(sg_loop_t *l, sg_op_t *op, int fd, const struct msghdr *msg);
void sg_epoll_connect(sg_loop_t *l, sg_op_t *op, int fd, const struct sockaddr *addr, socklen_t len);
void sg_epoll_recv(sg_loop_t *l, sg_op_t *op, int fd);
void sg_epoll_accept(sg_loop_t *l, sg_op_t *op, int fd);
void sg_epoll_cancel(sg_loop_t *l, sg_op_t *op, int fd);
void sg_epoll_forget(sg_loop_t *l, int fd);
void sg_epoll_buf_release(sg_loop_t *l, unsigned bid);
unsigned sg_epoll_bufs_live(const sg_loop_t *l);
int sg_epoll_run_once(sg_loop_t *l, int64_t deadline_ns);

/* The stamp a control message carries, on CLOCK_MONOTONIC: SCM_TIMESTAMPING's first timespec is the software
 * one. 0 when c is not that message or the stamp is empty. */
static inline int64_t sg_loop_cmsg_stamp(const sg_loop_t *l, const struct cmsghdr *c)
{
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPING ||
        c->cmsg_len < CMSG_LEN(sizeof(struct timespec)))
        return 0;
    struct timespec ts;
    memcpy(&ts, CMSG_DATA(c), sizeof ts);
    return sg_loop_map_stamp(l, &ts);
}

/* Room for the control data of a stamped receive: one SCM_TIMESTAMPING (three timespecs). */
#define SG_LOOP_CTRL_BYTES CMSG_SPACE(3 * sizeof(struct timespec))

/* How long to sleep before deadline_ns, given now: -1 forever, 0 not at all (the deadline is within spin_ns:
 * poll), else nanoseconds, ending spin_ns/2 before it so that the last stretch is polled. */
static inline int64_t sg_loop_sleep_ns(const sg_loop_t *l, int64_t deadline_ns, int64_t now)
{
    if (deadline_ns == INT64_MAX)
        return -1;
    if (deadline_ns - now <= l->spin_ns)
        return 0;
    return deadline_ns - now - l->spin_ns / 2;
}

/*
 * The window (ns) a turn that would sleep `sleep` (as sg_loop_sleep_ns says) may hold completions for: 0 when
 * coalescing is off, the deadline is to be polled for (sleep 0) or the window is under a microsecond. With a
 * deadline, at most half the sleep: the batch a window gathers must be handled before the deadline, and
 * handling a window's arrivals takes the window times the worker's busy share (under 1), so the other half is
 * room enough; the turns that follow halve what is left again, down to SG_LOOP_WINDOW_MIN_NS.
 */
static inline int64_t sg_loop_window_ns(const sg_loop_t *l, int64_t sleep)
{
    int64_t w = l->coalesce_ns;
    if (w < 1000 || sleep == 0)
        return 0;
    if (sleep > 0 && sleep / 2 < w) {
        if (sleep / 2 < SG_LOOP_WINDOW_MIN_NS)
            return 0;
        w = sleep / 2;
    }
    return w;
}

/* After a turn of the sleep fallback that waited (began at t0, napped nap ns first, got: completions were there
 * when the wait returned): whether the next one naps first (sg_loop_t.dense). */
static inline void sg_loop_note_density(sg_loop_t *l, int64_t t0, int64_t nap, bool got)
{
    l->dense = got && l->coalesce_ns && sg_now_ns() - t0 < nap + l->coalesce_ns;
}

/* Sleep ns (the fallback's window): clock_nanosleep on CLOCK_MONOTONIC, never cut short by a signal. */
void sg_loop_nap(int64_t ns);

#endif
