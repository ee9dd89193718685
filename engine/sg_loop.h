/*
 * The event loop every surge thread runs (client workers and mock-server workers alike): one io_uring ring,
 * one provided-buffer ring for receives, an eventfd to be woken from other threads, and waits bounded by an
 * absolute CLOCK_MONOTONIC deadline.
 *
 * Every SQE carries a pointer to an sg_op_t (usually embedded in a connection); its fn is called with the CQE.
 * Completions are reaped in batches and released with one io_uring_cq_advance.
 *
 * Threading: a loop is created, used and destroyed by one thread (the ring is SINGLE_ISSUER where the kernel
 * allows). Only sg_loop_wake() may be called from another thread.
 */
#ifndef SG_LOOP_H
#define SG_LOOP_H

#include "sg_common.h"

#include <liburing.h>

typedef struct sg_op sg_op_t;
typedef void (*sg_op_fn)(sg_op_t *op, const struct io_uring_cqe *cqe);
struct sg_op {
    sg_op_fn fn;
};

typedef struct {
    struct io_uring ring;
    /* provided buffers for receives (buffer group SG_LOOP_BGID) */
    struct io_uring_buf_ring *br;
    size_t br_bytes;
    char *bufs;
    size_t bufs_bytes;
    unsigned buf_count; /* power of two */
    unsigned buf_live;  /* of those, the buffers handed to the kernel so far */
    unsigned buf_size;
    unsigned bufs_released; /* releases not yet published to the kernel */
    /* cross-thread wake */
    int wake_fd;
    uint64_t wake_val;
    sg_op_t wake_op;
    bool defer_taskrun;
    int64_t spin_ns; /* a deadline closer than this is waited for by polling, not by sleeping */
    /* Called at the start of every sg_loop_run_once, before the queue is submitted: the owner's chance to turn
     * what a whole batch of completions left pending into SQEs (HTTP/2 sessions write once per batch). */
    void (*before_submit)(void *arg);
    void *before_submit_arg;
} sg_loop_t;

#define SG_LOOP_BGID 1
/* Receive buffers the kernel gets at first; every receive that finds none (ENOBUFS) doubles the number, up to
 * buf_count. A buffer's pages are touched only once the kernel has it, and a fresh page is a page fault (about
 * 1.5 us on a VM): a client with four HTTP/2 connections used to fault in all 1,024 (4 MiB) in every run. */
#define SG_LOOP_BUFS_FIRST 64

/*
 * entries: SQ size (CQ is 8x). buf_count (power of two) receive buffers of buf_size bytes each.
 * Returns 0 or -errno; on failure nothing is left allocated.
 */
SG_WUR int sg_loop_init(sg_loop_t *l, unsigned entries, unsigned buf_count, unsigned buf_size);
void sg_loop_destroy(sg_loop_t *l);

/* An SQE whose user_data is op. Never NULL: submits pending SQEs when the queue is full. */
struct io_uring_sqe *sg_loop_sqe(sg_loop_t *l, sg_op_t *op);

/* Multishot receive into provided buffers; every CQE with IORING_CQE_F_BUFFER carries a buffer id. */
void sg_loop_recv_multishot(sg_loop_t *l, int fd, sg_op_t *op);

/* The bytes of a received buffer, and giving it back once parsed. */
static inline char *sg_loop_buf(sg_loop_t *l, unsigned bid)
{
    return l->bufs + (size_t)bid * l->buf_size;
}
void sg_loop_buf_release(sg_loop_t *l, unsigned bid);

/*
 * Call before_submit (when set), submit what is queued, then wait until at least one completion arrives or the clock
 * reaches deadline_ns (absolute CLOCK_MONOTONIC; INT64_MAX: no deadline; <= now: do not wait), and dispatch every
 * completion. Deadlines closer than spin_ns are polled for rather than slept on, so timer slack never makes us late.
 * Returns the number of completions dispatched, or -errno.
 */
SG_WUR int sg_loop_run_once(sg_loop_t *l, int64_t deadline_ns);

/* Thread-safe: make the owner's sg_loop_run_once return soon, so it rechecks its state. */
void sg_loop_wake(sg_loop_t *l);

#endif
