#include "sg_loop.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

static void wake_arm(sg_loop_t *l);

static void on_wake(sg_op_t *op, const struct io_uring_cqe *cqe)
{
    /* Waking is all it is for: the owner rechecks its own state after every sg_loop_run_once. */
    (void)cqe;
    wake_arm(SG_CONTAINER_OF(op, sg_loop_t, wake_op));
}

static void wake_arm(sg_loop_t *l)
{
    struct io_uring_sqe *sqe = sg_loop_sqe(l, &l->wake_op);
    io_uring_prep_read(sqe, l->wake_fd, &l->wake_val, sizeof(l->wake_val), 0);
}

static int ring_init(sg_loop_t *l, unsigned entries)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
              IORING_SETUP_DEFER_TASKRUN;
    p.cq_entries = entries * 8;
    int err = io_uring_queue_init_params(entries, &l->ring, &p);
    if (err == 0) {
        l->defer_taskrun = true;
        return 0;
    }
    /* Older kernels (< 6.1) lack DEFER_TASKRUN / SINGLE_ISSUER: fall back to the plain ring. */
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = entries * 8;
    return io_uring_queue_init_params(entries, &l->ring, &p);
}

static void publish_buffers(sg_loop_t *l);

/* Hand the kernel n more of the buffers it has not had yet (published with the next releases). */
static void add_buffers(sg_loop_t *l, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        unsigned bid = l->buf_live + i;
        io_uring_buf_ring_add(l->br, sg_loop_buf(l, bid), l->buf_size, (unsigned short)bid,
                              io_uring_buf_ring_mask(l->buf_count), (int)(l->bufs_released + i));
    }
    l->buf_live += n;
    l->bufs_released += n;
}

int sg_loop_init(sg_loop_t *l, unsigned entries, unsigned buf_count, unsigned buf_size)
{
    memset(l, 0, sizeof(*l));
    l->wake_fd = -1;
    l->spin_ns = 50000;
    if (buf_count == 0 || (buf_count & (buf_count - 1)) || buf_count > 32768 || buf_size == 0)
        return -EINVAL;
    int err = ring_init(l, entries);
    if (err < 0)
        return err;

    l->buf_count = buf_count;
    l->buf_size = buf_size;
    l->br_bytes = (size_t)buf_count * sizeof(struct io_uring_buf);
    l->br = mmap(NULL, l->br_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (l->br == MAP_FAILED) {
        err = -errno;
        goto fail_ring;
    }
    l->bufs_bytes = (size_t)buf_count * buf_size;
    l->bufs = mmap(NULL, l->bufs_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (l->bufs == MAP_FAILED) {
        err = -errno;
        goto fail_br;
    }
    struct io_uring_buf_reg reg;
    memset(&reg, 0, sizeof(reg));
    reg.ring_addr = (uint64_t)(uintptr_t)l->br;
    reg.ring_entries = buf_count;
    reg.bgid = SG_LOOP_BGID;
    err = io_uring_register_buf_ring(&l->ring, &reg, 0);
    if (err < 0)
        goto fail_bufs;
    io_uring_buf_ring_init(l->br);
    add_buffers(l, buf_count < SG_LOOP_BUFS_FIRST ? buf_count : SG_LOOP_BUFS_FIRST);
    publish_buffers(l);

    l->wake_fd = eventfd(0, EFD_CLOEXEC);
    if (l->wake_fd < 0) {
        err = -errno;
        goto fail_reg;
    }
    l->wake_op.fn = on_wake;
    wake_arm(l);
    return 0;

fail_reg:
    io_uring_unregister_buf_ring(&l->ring, SG_LOOP_BGID);
fail_bufs:
    munmap(l->bufs, l->bufs_bytes);
fail_br:
    munmap(l->br, l->br_bytes);
fail_ring:
    io_uring_queue_exit(&l->ring);
    l->br = NULL;
    l->bufs = NULL;
    return err;
}

void sg_loop_destroy(sg_loop_t *l)
{
    if (!l->br)
        return;
    io_uring_queue_exit(&l->ring); /* cancels whatever is still in flight */
    munmap(l->bufs, l->bufs_bytes);
    munmap(l->br, l->br_bytes);
    if (l->wake_fd >= 0)
        close(l->wake_fd);
    l->br = NULL;
}

struct io_uring_sqe *sg_loop_sqe(sg_loop_t *l, sg_op_t *op)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
    while (SG_UNLIKELY(!sqe)) {
        io_uring_submit(&l->ring);
        sqe = io_uring_get_sqe(&l->ring);
    }
    io_uring_sqe_set_data(sqe, op);
    return sqe;
}

void sg_loop_recv_multishot(sg_loop_t *l, int fd, sg_op_t *op)
{
    struct io_uring_sqe *sqe = sg_loop_sqe(l, op);
    io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = SG_LOOP_BGID;
}

void sg_loop_buf_release(sg_loop_t *l, unsigned bid)
{
    io_uring_buf_ring_add(l->br, sg_loop_buf(l, bid), l->buf_size, (unsigned short)bid,
                          io_uring_buf_ring_mask(l->buf_count), (int)l->bufs_released);
    l->bufs_released++;
}

static void publish_buffers(sg_loop_t *l)
{
    if (l->bufs_released) {
        io_uring_buf_ring_advance(l->br, (int)l->bufs_released);
        l->bufs_released = 0;
    }
}

static int dispatch(sg_loop_t *l)
{
    struct io_uring_cqe *cqe;
    unsigned head, n = 0;
    io_uring_for_each_cqe(&l->ring, head, cqe)
    {
        sg_op_t *op = io_uring_cqe_get_data(cqe);
        /* a receive found no buffer: give the kernel more (doubling) before its owner arms it again */
        if (SG_UNLIKELY(cqe->res == -ENOBUFS) && l->buf_live < l->buf_count)
            add_buffers(l, l->buf_live < l->buf_count - l->buf_live ? l->buf_live : l->buf_count - l->buf_live);
        if (op)
            op->fn(op, cqe);
        n++;
    }
    io_uring_cq_advance(&l->ring, n);
    publish_buffers(l);
    return (int)n;
}

int sg_loop_run_once(sg_loop_t *l, int64_t deadline_ns)
{
    if (l->before_submit)
        l->before_submit(l->before_submit_arg);
    publish_buffers(l);
    int64_t now = sg_now_ns();
    int err;
    if (deadline_ns - now <= l->spin_ns) {
        /* Close or past: submit and poll, never sleep, so the caller can act on time. */
        err = io_uring_submit_and_get_events(&l->ring);
    } else if (deadline_ns == INT64_MAX) {
        err = io_uring_submit_and_wait(&l->ring, 1);
    } else {
        /* Sleep until just before the deadline; the last stretch is polled (see spin_ns). */
        int64_t wait = deadline_ns - now - l->spin_ns / 2;
        struct __kernel_timespec ts = {.tv_sec = wait / 1000000000LL, .tv_nsec = wait % 1000000000LL};
        struct io_uring_cqe *cqe = NULL;
        err = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, &ts, NULL);
        if (err == -ETIME)
            err = 0;
    }
    if (err < 0 && err != -EINTR && err != -EAGAIN && err != -EBUSY)
        return err;
    return dispatch(l);
}

void sg_loop_wake(sg_loop_t *l)
{
    uint64_t one = 1;
    ssize_t r = write(l->wake_fd, &one, sizeof(one));
    (void)r; /* the counter only saturates when the owner is not reading: it is awake anyway */
}
