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

#endif
