/*
 * sg_loop's io_uring backend: one ring per loop (SINGLE_ISSUER and DEFER_TASKRUN where the kernel has them),
 * multishot receives into a ring of provided buffers (buffer group SG_LOOP_BGID) that grows on ENOBUFS, and the
 * wake-up eventfd read by an SQE that re-arms itself.
 */
#include "loop_int.h"

#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SG_LOOP_BGID 1

/* Kernels since 6.12; liburing 2.3's headers predate it. */
#ifdef IORING_FEAT_MIN_TIMEOUT
#define SG_FEAT_MIN_TIMEOUT IORING_FEAT_MIN_TIMEOUT
#else
#define SG_FEAT_MIN_TIMEOUT (1U << 15)
#endif

struct sg_loop_uring {
    struct io_uring ring;
    struct io_uring_buf_ring *br;
    size_t br_bytes;
    unsigned buf_live;      /* of the buffers, those handed to the kernel so far */
    unsigned bufs_released; /* releases not yet published to the kernel */
    uint64_t wake_val;
    bool min_wait; /* IORING_FEAT_MIN_TIMEOUT: coalesce with the kernel's minimum wait (sg_loop.h) */
    sg_op_t wake_op;
    sg_loop_t *l;
    /* rx_stamps: what every multishot recvmsg asks for (no address, room for one SCM_TIMESTAMPING); the kernel
     * reads it when the SQE is submitted */
    struct msghdr rx_msg;
    unsigned rx_off; /* where the payload starts in each buffer: io_uring_recvmsg_out, then the control room */
};

static struct io_uring_sqe *get_sqe(struct sg_loop_uring *u, sg_op_t *op)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
    while (SG_UNLIKELY(!sqe)) {
        io_uring_submit(&u->ring);
        sqe = io_uring_get_sqe(&u->ring);
    }
    io_uring_sqe_set_data(sqe, op);
    return sqe;
}

static void wake_arm(struct sg_loop_uring *u)
{
    io_uring_prep_read(get_sqe(u, &u->wake_op), u->l->wake_fd, &u->wake_val, sizeof(u->wake_val), 0);
}

static void on_wake(sg_op_t *op, const sg_ev_t *ev)
{
    /* Waking is all it is for: the owner rechecks its own state after every sg_loop_run_once. */
    (void)ev;
    wake_arm(SG_CONTAINER_OF(op, struct sg_loop_uring, wake_op));
}

static int ring_init(struct io_uring *ring, unsigned entries)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
              IORING_SETUP_DEFER_TASKRUN;
    p.cq_entries = entries * 8;
    int err = io_uring_queue_init_params(entries, ring, &p);
    if (err == 0)
        return 0;
    /* Older kernels (< 6.1) lack DEFER_TASKRUN / SINGLE_ISSUER: fall back to the plain ring. */
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = entries * 8;
    return io_uring_queue_init_params(entries, ring, &p);
}

/* Hand the kernel n more of the buffers it has not had yet (published with the next releases). */
static void add_buffers(sg_loop_t *l, unsigned n)
{
    struct sg_loop_uring *u = l->u;
    for (unsigned i = 0; i < n; i++) {
        unsigned bid = u->buf_live + i;
        io_uring_buf_ring_add(u->br, sg_loop_buf(l, bid), l->buf_size, (unsigned short)bid,
                              io_uring_buf_ring_mask(l->buf_count), (int)(u->bufs_released + i));
    }
    u->buf_live += n;
    u->bufs_released += n;
}

static void publish_buffers(struct sg_loop_uring *u)
{
    if (u->bufs_released) {
        io_uring_buf_ring_advance(u->br, (int)u->bufs_released);
        u->bufs_released = 0;
    }
}

/* A buffer ring of n entries registered as the receive group: the mapping, or MAP_FAILED with *err set. */
static struct io_uring_buf_ring *buf_ring_register(struct io_uring *ring, unsigned n, size_t *bytes, int *err)
{
    *bytes = (size_t)n * sizeof(struct io_uring_buf);
    struct io_uring_buf_ring *br = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (br == MAP_FAILED) {
        *err = -errno;
        return br;
    }
    struct io_uring_buf_reg reg;
    memset(&reg, 0, sizeof(reg));
    reg.ring_addr = (uint64_t)(uintptr_t)br;
    reg.ring_entries = n;
    reg.bgid = SG_LOOP_BGID;
    *err = io_uring_register_buf_ring(ring, &reg, 0);
    if (*err < 0) {
        munmap(br, *bytes);
        return MAP_FAILED;
    }
    io_uring_buf_ring_init(br);
    return br;
}

int sg_uring_init(sg_loop_t *l, unsigned entries)
{
    struct sg_loop_uring *u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    u->l = l;
    int err = ring_init(&u->ring, entries);
    if (err < 0) {
        free(u);
        return err;
    }
    u->br = buf_ring_register(&u->ring, l->buf_count, &u->br_bytes, &err);
    if (u->br == MAP_FAILED) {
        io_uring_queue_exit(&u->ring);
        free(u);
        return err;
    }
    u->min_wait = u->ring.features & SG_FEAT_MIN_TIMEOUT;
    l->u = u;
    u->rx_msg.msg_controllen = SG_LOOP_CTRL_BYTES;
    u->rx_off = (unsigned)(sizeof(struct io_uring_recvmsg_out) + SG_LOOP_CTRL_BYTES);
    add_buffers(l, l->buf_count < SG_LOOP_BUFS_FIRST ? l->buf_count : SG_LOOP_BUFS_FIRST);
    publish_buffers(u);
    u->wake_op.fn = on_wake;
    wake_arm(u);
    return 0;
}

void sg_uring_destroy(sg_loop_t *l)
{
    struct sg_loop_uring *u = l->u;
    io_uring_queue_exit(&u->ring); /* cancels whatever is still in flight */
    munmap(u->br, u->br_bytes);
    free(u);
    l->u = NULL;
}

void sg_uring_send(sg_loop_t *l, sg_op_t *op, int fd, const void *p, size_t n)
{
    io_uring_prep_send(get_sqe(l->u, op), fd, p, n, MSG_NOSIGNAL);
}

void sg_uring_sendmsg(sg_loop_t *l, sg_op_t *op, int fd, const struct msghdr *msg)
{
    io_uring_prep_sendmsg(get_sqe(l->u, op), fd, msg, MSG_NOSIGNAL);
}

void sg_uring_connect(sg_loop_t *l, sg_op_t *op, int fd, const struct sockaddr *addr, socklen_t len)
{
    io_uring_prep_connect(get_sqe(l->u, op), fd, addr, len);
}

void sg_uring_recv(sg_loop_t *l, sg_op_t *op, int fd)
{
    struct io_uring_sqe *sqe = get_sqe(l->u, op);
    if (l->rx_stamps)
        io_uring_prep_recvmsg_multishot(sqe, fd, &l->u->rx_msg, 0);
    else
        io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = SG_LOOP_BGID;
}

void sg_uring_accept(sg_loop_t *l, sg_op_t *op, int fd)
{
    io_uring_prep_multishot_accept(get_sqe(l->u, op), fd, NULL, NULL, SOCK_CLOEXEC);
}

void sg_uring_cancel(sg_loop_t *l, sg_op_t *op)
{
    /* submitted now, while the op it names still exists; its own completion says -ECANCELED (or nothing, when
     * it had already completed: the cancel's completion, which names no op, says -ENOENT) */
    io_uring_prep_cancel(get_sqe(l->u, NULL), op, 0);
    io_uring_submit(&l->u->ring);
}

int sg_uring_flush(sg_loop_t *l)
{
    int err = io_uring_submit(&l->u->ring);
    return err < 0 ? err : 0;
}

void sg_uring_buf_release(sg_loop_t *l, unsigned bid)
{
    struct sg_loop_uring *u = l->u;
    io_uring_buf_ring_add(u->br, sg_loop_buf(l, bid), l->buf_size, (unsigned short)bid,
                          io_uring_buf_ring_mask(l->buf_count), (int)u->bufs_released);
    u->bufs_released++;
}

unsigned sg_uring_bufs_live(const sg_loop_t *l)
{
    return l->u->buf_live;
}

/*
 * A recvmsg completion's buffer: io_uring_recvmsg_out, the control data (room for SG_LOOP_CTRL_BYTES, of which
 * the kernel says how much it used), then the payload, at the same offset in every buffer. The event is made to
 * look like a plain receive's, with the payload's offset and the stamp. End of stream arrives as a buffer with no
 * payload: the buffer goes straight back and the event says 0.
 */
static void recvmsg_event(sg_loop_t *l, sg_ev_t *ev)
{
    struct sg_loop_uring *u = l->u;
    char *b = sg_loop_buf(l, ev->bid);
    struct io_uring_recvmsg_out *o = io_uring_recvmsg_validate(b, ev->res, &u->rx_msg);
    unsigned payload = o ? (unsigned)io_uring_recvmsg_payload_length(o, ev->res, &u->rx_msg) : 0;
    if (SG_UNLIKELY(payload == 0)) {
        sg_uring_buf_release(l, ev->bid);
        ev->res = 0;
        ev->buf = false;
        return;
    }
    for (struct cmsghdr *c = io_uring_recvmsg_cmsg_firsthdr(o, &u->rx_msg); c;
         c = io_uring_recvmsg_cmsg_nexthdr(o, &u->rx_msg, c))
        if ((ev->t_ns = sg_loop_cmsg_stamp(l, c)) != 0)
            break;
    ev->res = (int)payload;
    ev->off = u->rx_off;
}

static int dispatch(sg_loop_t *l, int64_t now)
{
    struct sg_loop_uring *u = l->u;
    struct io_uring_cqe *cqe;
    unsigned head, n = 0;
    io_uring_for_each_cqe(&u->ring, head, cqe)
    {
        sg_op_t *op = io_uring_cqe_get_data(cqe);
        /* a receive found no buffer: give the kernel more (doubling) before its owner arms it again */
        if (SG_UNLIKELY(cqe->res == -ENOBUFS) && u->buf_live < l->buf_count)
            add_buffers(l, u->buf_live < l->buf_count - u->buf_live ? u->buf_live : l->buf_count - u->buf_live);
        if (op) {
            sg_ev_t ev = {.res = cqe->res,
                          .bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT,
                          .buf = cqe->flags & IORING_CQE_F_BUFFER,
                          .more = cqe->flags & IORING_CQE_F_MORE};
            /* only receives take buffers; on a stamping loop they are recvmsg's */
            if (ev.buf && l->rx_stamps)
                recvmsg_event(l, &ev);
            else if (!ev.buf)
                ev.t_ns = now;
            op->fn(op, &ev);
        }
        n++;
    }
    io_uring_cq_advance(&u->ring, n);
    publish_buffers(u);
    return (int)n;
}

bool sg_uring_min_wait(const sg_loop_t *l)
{
    return l->u->min_wait;
}

void sg_uring_set_min_wait(sg_loop_t *l, bool on)
{
    l->u->min_wait = on && (l->u->ring.features & SG_FEAT_MIN_TIMEOUT);
}

/* What liburing's io_uring_submit does before its io_uring_enter (2.3's __io_uring_flush_sq, not exported): make
 * the SQEs queued so far visible to the kernel; the count it has yet to consume. No SQPOLL here. */
static unsigned sq_flush(struct io_uring *ring)
{
    struct io_uring_sq *sq = &ring->sq;
    unsigned tail = sq->sqe_tail;
    if (sq->sqe_head != tail) {
        sq->sqe_head = tail;
        io_uring_smp_store_release(sq->ktail, tail);
    }
    return tail - io_uring_smp_load_acquire(sq->khead);
}

/*
 * Submit, then wait for as many completions as the CQ holds, at most `sleep` ns (< 0: no deadline), returning
 * once `window` ns have passed since the wait began if any completion is there (IORING_FEAT_MIN_TIMEOUT). The
 * timeout is always given: without one the kernel would end the wait at the window even with nothing to show.
 */
static int submit_and_wait_min(struct sg_loop_uring *u, int64_t sleep, int64_t window)
{
    if (sleep < 0)
        sleep = 1000000000LL; /* no deadline: wake once a second, harmlessly */
    struct __kernel_timespec ts = {.tv_sec = sleep / 1000000000LL, .tv_nsec = sleep % 1000000000LL};
    /* struct io_uring_getevents_arg as the kernel reads it: liburing 2.3 names min_wait_usec `pad`, later
     * versions min_wait_usec, so surge spells the layout out itself */
    struct {
        uint64_t sigmask;
        uint32_t sigmask_sz;
        uint32_t min_wait_usec;
        uint64_t ts;
    } arg = {.sigmask = 0,
             .sigmask_sz = _NSIG / 8,
             .min_wait_usec = (uint32_t)(window / 1000),
             .ts = (uint64_t)(uintptr_t)&ts};
    _Static_assert(sizeof(arg) == sizeof(struct io_uring_getevents_arg), "io_uring_getevents_arg's layout");
    unsigned submit = sq_flush(&u->ring);
    int err = io_uring_enter2((unsigned)u->ring.ring_fd, submit, *u->ring.cq.kring_entries,
                              IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, (sigset_t *)&arg, sizeof(arg));
    return err == -ETIME ? 0 : err;
}

int sg_uring_run_once(sg_loop_t *l, int64_t deadline_ns)
{
    struct sg_loop_uring *u = l->u;
    publish_buffers(u);
    int64_t now = sg_now_ns(); /* also the send time of what this turn submits (dispatch, below) */
    int64_t sleep = sg_loop_sleep_ns(l, deadline_ns, now);
    int64_t window = sg_loop_window_ns(l, sleep), nap = 0;
    bool waits = sleep != 0;
    int err;
    if (waits)
        l->waits++;
    if (window && u->min_wait) {
        l->coalesced++;
        l->coalesced_ns += (uint64_t)window;
        err = submit_and_wait_min(u, sleep, window);
        goto done;
    }
    if (window && l->dense) {
        /* the fallback: completions come more often than once a window, so let more of them gather first; what is
         * queued goes to the kernel before the nap, so a send leaves now (its time is `now`) */
        (void)io_uring_submit(&u->ring);
        l->coalesced++;
        l->coalesced_ns += (uint64_t)window;
        nap = window;
        sg_loop_nap(window);
        sleep = sg_loop_sleep_ns(l, deadline_ns, sg_now_ns());
    }
    if (sleep == 0) {
        /* Close or past: submit and poll, never sleep, so the caller can act on time. */
        err = io_uring_submit_and_get_events(&u->ring);
    } else if (sleep < 0) {
        err = io_uring_submit_and_wait(&u->ring, 1);
    } else {
        /* Sleep until just before the deadline; the last stretch is polled (see spin_ns). */
        struct __kernel_timespec ts = {.tv_sec = sleep / 1000000000LL, .tv_nsec = sleep % 1000000000LL};
        struct io_uring_cqe *cqe = NULL;
        err = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
        if (err == -ETIME)
            err = 0;
    }
    if (waits)
        sg_loop_note_density(l, now, nap, io_uring_cq_ready(&u->ring) > 0);
done:
    if (err < 0 && err != -EINTR && err != -EAGAIN && err != -EBUSY)
        return err;
    /* Sends complete inside the io_uring_enter that submits them (loopback or not, the bytes go to the socket
     * there): the clock read just before it is their time, however long the wait that follows (a batching
     * window included). A send that had to wait for room completed during that wait: up to it earlier. */
    return dispatch(l, now);
}

/* ---------------- the probe ---------------- */

/* The ring surge sets up, its buffer ring, and one multishot receive that delivers a byte into a provided buffer
 * and stays armed: what kernels before 6.0 (multishot receive), 5.19 (buffer rings) or a seccomp filter refuse. */
int sg_uring_probe(char *why, size_t whylen)
{
    struct io_uring ring;
    int err = ring_init(&ring, 8);
    if (err < 0) {
        snprintf(why, whylen, "io_uring_setup: %s", sg_strerror(err));
        return err;
    }
    int sv[2] = {-1, -1};
    size_t br_bytes;
    char buf[64];
    struct io_uring_buf_ring *br = buf_ring_register(&ring, 1, &br_bytes, &err);
    if (br == MAP_FAILED) {
        snprintf(why, whylen, "io_uring buffer ring: %s", sg_strerror(err));
        goto out;
    }
    io_uring_buf_ring_add(br, buf, sizeof buf, 0, io_uring_buf_ring_mask(1), 0);
    io_uring_buf_ring_advance(br, 1);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        err = -errno;
        snprintf(why, whylen, "socketpair: %s", sg_strerror(err));
        goto out_br;
    }
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    io_uring_prep_recv_multishot(sqe, sv[0], NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = SG_LOOP_BGID;
    if (write(sv[1], "x", 1) != 1) {
        err = -errno;
        snprintf(why, whylen, "socketpair write: %s", sg_strerror(err));
        goto out_br;
    }
    struct io_uring_cqe *cqe = NULL;
    err = io_uring_submit_and_wait(&ring, 1);
    if (err >= 0)
        err = io_uring_peek_cqe(&ring, &cqe);
    if (err < 0) {
        snprintf(why, whylen, "io_uring_enter: %s", sg_strerror(err));
    } else if (cqe->res != 1 || !(cqe->flags & IORING_CQE_F_BUFFER) || !(cqe->flags & IORING_CQE_F_MORE)) {
        snprintf(why, whylen, "io_uring multishot receive unsupported (%s)",
                 cqe->res < 0 ? sg_strerror(cqe->res) : "it did not stay armed");
        err = cqe->res < 0 ? cqe->res : -EOPNOTSUPP;
    } else {
        err = 0;
    }
out_br:
    io_uring_queue_exit(&ring); /* before the buffers and sockets it may still use */
    munmap(br, br_bytes);
    if (sv[0] >= 0) {
        close(sv[0]);
        close(sv[1]);
    }
    return err;
out:
    io_uring_queue_exit(&ring);
    return err;
}
