/*
 * The event loop every surge thread runs (client workers and mock-server workers alike): a handful of socket
 * operations, each completed later through its sg_op_t, receives into the loop's own buffers, an eventfd to be
 * woken from other threads, and waits bounded by an absolute CLOCK_MONOTONIC deadline.
 *
 * Two I/O backends sit under the one interface, picked per run (sg_loop_pick):
 *   - io_uring (loop_uring.c): operations are SQEs submitted once per iteration; receives are multishot into a
 *     ring of provided buffers; completions are reaped in batches.
 *   - epoll (loop_epoll.c), for where io_uring is blocked (the seccomp profiles of Docker, containerd and
 *     Podman, kernel.io_uring_disabled) or too old: edge-triggered readiness, sends and connects tried at once,
 *     receives read into the same buffer pool, the same completion contract.
 * Callers see only sg_op_t and sg_ev_t: what happened, never how the kernel was asked.
 *
 * The contract, both backends:
 *   - An operation's completion is never delivered from inside the call that started it; it comes from a later
 *     sg_loop_run_once (or the current one's dispatch, when started from a callback).
 *   - send and connect complete exactly once. recv and accept are multishot: they complete once per buffer or
 *     accepted descriptor with more=true, and a last time with more=false (0 at end of stream, -errno, or
 *     -ENOBUFS when no buffer was free, after which the owner arms them again).
 *   - sg_loop_cancel ends a pending operation with -ECANCELED (more=false); one already complete is left alone.
 *   - A descriptor the loop has seen is closed with sg_loop_close, never close(2), so that the epoll backend
 *     forgets it before the number is reused.
 *
 * Threading: a loop is created, used and destroyed by one thread. Only sg_loop_wake() may be called from another.
 */
#ifndef SG_LOOP_H
#define SG_LOOP_H

#include "sg_common.h"

#include <sys/socket.h>

typedef enum { SG_IO_AUTO = 0, SG_IO_URING = 1, SG_IO_EPOLL = 2 } sg_io_backend_t;

/* One completion: what the operation returned, and for a receive the buffer it filled. */
typedef struct {
    int res;      /* bytes sent or received, 0 (connect done, or end of stream), a new descriptor, or -errno */
    unsigned bid; /* the buffer holding the bytes, when buf */
    unsigned off; /* where in buffer bid the res received bytes start (sg_loop_data): past the control data */
    bool buf;     /* a receive filled buffer bid: give it back with sg_loop_buf_release */
    bool more;    /* a multishot operation stays armed */
    /* A receive on a loop with rx_stamps: when the kernel received the segment (the last one, when the read
     * took several), on CLOCK_MONOTONIC through rt_off_ns; 0 when the kernel gave no stamp. A send: when it
     * went (io_uring: the clock read just before the io_uring_enter that submitted it, or in whose wait it
     * completed; epoll: right after send(2) returned). Otherwise 0 or that time. */
    int64_t t_ns;
} sg_ev_t;

typedef struct sg_op sg_op_t;
typedef void (*sg_op_fn)(sg_op_t *op, const sg_ev_t *ev);
struct sg_op {
    sg_op_fn fn;
};

struct sg_loop_uring;
struct sg_loop_epoll;

typedef struct {
    sg_io_backend_t backend; /* SG_IO_URING or SG_IO_EPOLL once initialised */
    struct sg_loop_uring *u; /* the backend's state: exactly one of these is set */
    struct sg_loop_epoll *e;
    char *bufs; /* buf_count receive buffers of buf_size bytes; pages are touched only when first used */
    size_t bufs_bytes;
    unsigned buf_count; /* power of two */
    unsigned buf_size;
    int wake_fd;     /* eventfd: sg_loop_wake from another thread */
    int64_t spin_ns; /* a deadline closer than this is waited for by polling, not by sleeping */
    /* Called at the start of every sg_loop_run_once, before anything is submitted or waited for: the owner's
     * chance to turn what a whole batch of completions left pending into operations (HTTP/2 sessions write once
     * per batch). */
    void (*before_submit)(void *arg);
    void *before_submit_arg;
    /* Set before the first sg_loop_recv, never changed after: receives use recvmsg and hand back the kernel's
     * software receive stamp of each read (sg_ev_t.t_ns) for sockets with SO_TIMESTAMPING's
     * SOF_TIMESTAMPING_RX_SOFTWARE on (sg_loop_stamp_socket). Off (the mock server), receives are plain recv. */
    bool rx_stamps;
    /* CLOCK_REALTIME minus CLOCK_MONOTONIC, as sg_loop_clock_sync last read it: the kernel's stamps are realtime */
    int64_t rt_off_ns;
    /*
     * Coalesced wake-ups: how long the next sg_loop_run_once may hold completions back so that it hands over
     * more of them per wake-up. 0 (the default: the mock server keeps it) is off. The owner sets it before each
     * call (the client worker's adaptive window, worker.c). The loop never holds anything past deadline_ns: with
     * a deadline the window ends at most halfway to it, so that the batch is handled before it is due, and none
     * under SG_LOOP_WINDOW_MIN_NS is waited for (loop_int.h, sg_loop_window_ns). How, per backend:
     *   - io_uring with IORING_FEAT_MIN_TIMEOUT: one io_uring_enter asks for many completions, the deadline as
     *     its timeout and the window as its minimum wait: the kernel returns once the window has passed (from
     *     the start of the wait) if any completion is there, else at the first one after it.
     *   - otherwise (io_uring without it, epoll): when the previous wait found completions within a window of
     *     its start (they come more often than once a window), the turn first sleeps the window, then waits as
     *     usual; sparse traffic (a wait that lasts longer than a window) costs no extra sleep.
     */
    int64_t coalesce_ns;
    /* Counts since sg_loop_init (the owner may zero them), for the summary: turns (sg_loop_run_once calls), the
     * turns that waited (the others polled: something was pending, or the deadline within spin_ns), the
     * completions they dispatched, the turns that held completions back (a minimum wait or a sleep), and the
     * sum of those turns' windows (ns). */
    uint64_t turns, waits, completions, coalesced, coalesced_ns;
    bool dense; /* the sleep fallback: the last wait found completions within a window of its start (loop_int.h) */
} sg_loop_t;

/* Receive buffers io_uring gets at first; every receive that finds none (ENOBUFS) doubles the number, up to
 * buf_count. A buffer's pages are touched only once the kernel has it, and a fresh page is a page fault (about
 * 1.5 us on a VM): a client with four HTTP/2 connections used to fault in all 1,024 (4 MiB) in every run. The
 * epoll backend hands out the most recently released buffer first, so it touches only as many as it holds at
 * once. */
#define SG_LOOP_BUFS_FIRST 64

/* Coalescing windows shorter than this are not worth a wait of their own (a deadline's cut, the worker's
 * adaptive window): the turn waits as usual. */
#define SG_LOOP_WINDOW_MIN_NS 20000

const char *sg_io_backend_name(sg_io_backend_t b); /* "auto", "io_uring", "epoll" */
int sg_io_backend_parse(const char *s);            /* the name's backend, or -1 */

/*
 * The backend a run uses, decided once per process before any loop starts. SG_IO_URING and SG_IO_EPOLL are
 * checked (io_uring: a ring with the features surge uses, and a multishot receive that works) and returned, or
 * -errno with why[] saying what failed. SG_IO_AUTO returns io_uring when that check passes, else epoll, with
 * why[] saying why io_uring was passed over (empty when it was not). Never fails for SG_IO_EPOLL short of
 * epoll_create failing.
 */
SG_WUR int sg_loop_pick(sg_io_backend_t want, char *why, size_t whylen);

/*
 * backend: SG_IO_URING or SG_IO_EPOLL (as sg_loop_pick returned). entries: io_uring's SQ size (CQ is 8x);
 * epoll ignores it. buf_count (power of two, at most 32,768) receive buffers of buf_size bytes each.
 * Returns 0 or -errno; on failure nothing is left allocated.
 */
SG_WUR int sg_loop_init(sg_loop_t *l, sg_io_backend_t backend, unsigned entries, unsigned buf_count, unsigned buf_size);
void sg_loop_destroy(sg_loop_t *l);

/* Send up to n bytes of p (valid until the completion): res is the count sent, which may be short, or -errno. */
void sg_loop_send(sg_loop_t *l, sg_op_t *op, int fd, const void *p, size_t n);
/* The same for the bytes msg's iovecs name (msg, its iovecs and their bytes valid until the completion). */
void sg_loop_sendmsg(sg_loop_t *l, sg_op_t *op, int fd, const struct msghdr *msg);
/* Connect fd (a fresh stream socket) to addr: res 0 or -errno. */
void sg_loop_connect(sg_loop_t *l, sg_op_t *op, int fd, const struct sockaddr *addr, socklen_t len);
/* Multishot receive into the loop's buffers (see the contract above). */
void sg_loop_recv(sg_loop_t *l, sg_op_t *op, int fd);
/* Multishot accept on a listening socket: res is each new descriptor (close-on-exec). */
void sg_loop_accept(sg_loop_t *l, sg_op_t *op, int fd);
/* End op (pending on fd) with -ECANCELED; io_uring is told at once. */
void sg_loop_cancel(sg_loop_t *l, sg_op_t *op, int fd);
/* Close a descriptor the loop has seen. */
void sg_loop_close(sg_loop_t *l, int fd);
/* Hand the kernel what is queued now, rather than at the next sg_loop_run_once: 0 or -errno. */
SG_WUR int sg_loop_flush(sg_loop_t *l);

/* The bytes of a received buffer, and giving it back once parsed. */
static inline char *sg_loop_buf(sg_loop_t *l, unsigned bid)
{
    return l->bufs + (size_t)bid * l->buf_size;
}
/* The ev->res bytes a receive completion delivered. */
static inline char *sg_loop_data(sg_loop_t *l, const sg_ev_t *ev)
{
    return sg_loop_buf(l, ev->bid) + ev->off;
}
void sg_loop_buf_release(sg_loop_t *l, unsigned bid);
/* Receive buffers in use so far: handed to io_uring, or ever held at once under epoll. */
unsigned sg_loop_bufs_live(const sg_loop_t *l);

/*
 * Call before_submit (when set), submit what is queued, then wait until at least one completion arrives or the clock
 * reaches deadline_ns (absolute CLOCK_MONOTONIC; INT64_MAX: no deadline; <= now: do not wait), and dispatch every
 * completion. Deadlines closer than spin_ns are polled for rather than slept on, so timer slack never makes us late.
 * Returns the number of completions dispatched, or -errno.
 */
SG_WUR int sg_loop_run_once(sg_loop_t *l, int64_t deadline_ns);

/*
 * Kernel receive stamps. sg_loop_stamp_socket turns on software receive stamps for fd (SO_TIMESTAMPING with
 * SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE): 0 or -errno. sg_loop_clock_sync reads the offset
 * of CLOCK_REALTIME (what the stamps are in) over CLOCK_MONOTONIC into l->rt_off_ns and returns how far it
 * moved since the last read (0 the first time): a move larger than NTP's slewing allows in the time between
 * two reads (0.5 ms a second) is a step of the realtime clock (NTP stepping it, an operator).
 */
int sg_loop_stamp_socket(int fd);
int64_t sg_loop_clock_sync(sg_loop_t *l);
/* A timespec of SCM_TIMESTAMPING onto CLOCK_MONOTONIC ns; 0 when it is zero (no stamp). */
static inline int64_t sg_loop_map_stamp(const sg_loop_t *l, const struct timespec *ts)
{
    int64_t rt = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
    return rt ? rt - l->rt_off_ns : 0;
}
/* How this loop coalesces when asked (coalesce_ns > 0): "io_uring_min_wait" (IORING_FEAT_MIN_TIMEOUT) or
 * "sleep" (the fallback above). */
const char *sg_loop_coalesce_method(const sg_loop_t *l);

/* Thread-safe: make the owner's sg_loop_run_once return soon, so it rechecks its state. */
void sg_loop_wake(sg_loop_t *l);

#endif
