/*
 * sg_loop's epoll backend, for where io_uring is blocked or missing. The same contract as io_uring's (sg_loop.h),
 * made of readiness:
 *   - Every descriptor is registered once, edge-triggered for reading and writing, when its first operation
 *     starts; what the kernel said (readable, writable, hung up) is kept per descriptor until a call says
 *     otherwise (EAGAIN).
 *   - send and connect are tried at once; when they cannot finish, they wait for the descriptor to become
 *     writable. Their completion is queued and dispatched by sg_loop_run_once, never from the call itself.
 *   - recv and accept stay armed; a readable descriptor is read into a free buffer of the pool, at most a few
 *     buffers a turn so that one busy connection does not starve the rest. A short read means the socket is
 *     drained (the next data is a new edge), unless it had hung up, when we read on to the end.
 *   - Waits use epoll_pwait2's nanosecond timeout, or a timerfd's where a seccomp profile or an old kernel lacks
 *     it, with the same final spin as io_uring's. Coalescing (coalesce_ns) sleeps the window before the wait
 *     when the previous wait found completions within a window of its start (sg_loop.h).
 * Completions from the kernel's events are dispatched after the whole batch of events is noted, so a descriptor
 * closed and reused by a callback never takes the events of its predecessor.
 */
#define _GNU_SOURCE /* accept4 */
#include "loop_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define EP_EVENTS 256
#define EP_READS_PER_TURN 8
#define EP_ACCEPTS_PER_TURN 64

enum { RD_NONE = 0, RD_RECV, RD_ACCEPT };
enum { WR_NONE = 0, WR_SEND, WR_CONNECT };
enum { F_REG = 1, F_READ = 2, F_WRITE = 4, F_HUP = 8, F_QUEUED = 16 };

typedef struct {
    sg_op_t *rd, *wr;
    const void *wp; /* a send waiting for room */
    size_t wn;
    const struct msghdr *wm; /* or a sendmsg (wp unused) */
    uint8_t rd_kind, wr_kind, flags;
} ep_fd_t;

typedef struct {
    sg_op_t *op;
    sg_ev_t ev;
} ep_done_t;

struct sg_loop_epoll {
    int epfd;
    ep_fd_t *fds; /* by descriptor number */
    unsigned nfds;
    int *ready; /* descriptors with an operation that may progress now */
    unsigned n_ready, cap_ready;
    ep_done_t *done, *done2; /* completions to dispatch; the second array takes those queued while dispatching */
    unsigned n_done, cap_done, cap_done2;
    unsigned *free_bids; /* a stack: the buffer released last is used first */
    unsigned n_free;
    unsigned bufs_held, bufs_peak;
    bool no_pwait2;   /* epoll_pwait2 is refused here: waits on timer_fd */
    int timer_fd;     /* -1: not made yet; -2: none to be had (millisecond waits) */
    int64_t timer_at; /* the absolute instant it is armed for; 0: disarmed */
    struct epoll_event evs[EP_EVENTS];
};

/* ---------------- bookkeeping ---------------- */

static ep_fd_t *fd_entry(struct sg_loop_epoll *e, int fd)
{
    if (SG_UNLIKELY((unsigned)fd >= e->nfds)) {
        unsigned n = e->nfds ? e->nfds : 256;
        while (n <= (unsigned)fd)
            n *= 2;
        ep_fd_t *p = realloc(e->fds, n * sizeof(*p));
        if (!p)
            return NULL;
        memset(p + e->nfds, 0, (n - e->nfds) * sizeof(*p));
        e->fds = p;
        e->nfds = n;
    }
    return &e->fds[fd];
}

/* The entry for fd, registered with epoll and made non-blocking on first use; NULL (errno set) on failure. */
static ep_fd_t *fd_register(struct sg_loop_epoll *e, int fd)
{
    ep_fd_t *f = fd_entry(e, fd);
    if (!f) {
        errno = ENOMEM;
        return NULL;
    }
    if (SG_LIKELY(f->flags & F_REG))
        return f;
    if (fcntl(fd, F_SETFL, O_RDWR | O_NONBLOCK) < 0)
        return NULL;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.u64 = (uint64_t)fd};
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 && errno != EEXIST)
        return NULL;
    /* writable until a send says otherwise; readable only once epoll says so (ADD reports what is ready now) */
    f->flags = F_REG | F_WRITE;
    return f;
}

static void queue_ready(struct sg_loop_epoll *e, int fd)
{
    ep_fd_t *f = &e->fds[fd];
    if (f->flags & F_QUEUED)
        return;
    if (e->n_ready == e->cap_ready) {
        unsigned cap = e->cap_ready ? e->cap_ready * 2 : 64;
        int *p = realloc(e->ready, cap * sizeof(*p));
        if (!p)
            abort(); /* a few bytes per descriptor: out of memory here is out of memory everywhere */
        e->ready = p;
        e->cap_ready = cap;
    }
    e->ready[e->n_ready++] = fd;
    f->flags |= F_QUEUED;
}

static void queue_done(struct sg_loop_epoll *e, sg_op_t *op, int res, bool more)
{
    if (e->n_done == e->cap_done) {
        unsigned cap = e->cap_done ? e->cap_done * 2 : 64;
        ep_done_t *p = realloc(e->done, cap * sizeof(*p));
        if (!p)
            abort();
        e->done = p;
        e->cap_done = cap;
    }
    e->done[e->n_done++] = (ep_done_t){.op = op, .ev = {.res = res, .more = more}};
}

static void deliver(sg_op_t *op, int res, bool more)
{
    sg_ev_t ev = {.res = res, .more = more};
    op->fn(op, &ev);
}

/* ---------------- operations ---------------- */

void sg_epoll_send(sg_loop_t *l, sg_op_t *op, int fd, const void *p, size_t n)
{
    struct sg_loop_epoll *e = l->e;
    ep_fd_t *f = fd_register(e, fd);
    if (SG_UNLIKELY(!f || f->wr)) {
        queue_done(e, op, f ? -EALREADY : -errno, false);
        return;
    }
    if (f->flags & F_WRITE) {
        ssize_t r = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            queue_done(e, op, r >= 0 ? (int)r : -errno, false);
            e->done[e->n_done - 1].ev.t_ns = sg_now_ns(); /* when it went */
            return;
        }
        f->flags &= ~F_WRITE;
    }
    f->wr = op;
    f->wr_kind = WR_SEND;
    f->wp = p;
    f->wn = n;
    f->wm = NULL;
}

void sg_epoll_sendmsg(sg_loop_t *l, sg_op_t *op, int fd, const struct msghdr *msg)
{
    struct sg_loop_epoll *e = l->e;
    ep_fd_t *f = fd_register(e, fd);
    if (SG_UNLIKELY(!f || f->wr)) {
        queue_done(e, op, f ? -EALREADY : -errno, false);
        return;
    }
    if (f->flags & F_WRITE) {
        ssize_t r = sendmsg(fd, msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            queue_done(e, op, r >= 0 ? (int)r : -errno, false);
            e->done[e->n_done - 1].ev.t_ns = sg_now_ns(); /* when it went */
            return;
        }
        f->flags &= ~F_WRITE;
    }
    f->wr = op;
    f->wr_kind = WR_SEND;
    f->wm = msg;
}

void sg_epoll_connect(sg_loop_t *l, sg_op_t *op, int fd, const struct sockaddr *addr, socklen_t len)
{
    struct sg_loop_epoll *e = l->e;
    ep_fd_t *f = fd_register(e, fd);
    if (SG_UNLIKELY(!f || f->wr)) {
        queue_done(e, op, f ? -EALREADY : -errno, false);
        return;
    }
    if (connect(fd, addr, len) == 0) {
        queue_done(e, op, 0, false);
        return;
    }
    if (errno != EINPROGRESS && errno != EAGAIN) {
        queue_done(e, op, -errno, false);
        return;
    }
    f->flags &= ~F_WRITE; /* epoll says writable once the handshake is done or failed */
    f->wr = op;
    f->wr_kind = WR_CONNECT;
}

static void arm_read(sg_loop_t *l, sg_op_t *op, int fd, uint8_t kind)
{
    struct sg_loop_epoll *e = l->e;
    ep_fd_t *f = fd_register(e, fd);
    if (SG_UNLIKELY(!f || f->rd)) {
        queue_done(e, op, f ? -EALREADY : -errno, false);
        return;
    }
    f->rd = op;
    f->rd_kind = kind;
    if (f->flags & F_READ)
        queue_ready(e, fd);
}

void sg_epoll_recv(sg_loop_t *l, sg_op_t *op, int fd)
{
    arm_read(l, op, fd, RD_RECV);
}

void sg_epoll_accept(sg_loop_t *l, sg_op_t *op, int fd)
{
    arm_read(l, op, fd, RD_ACCEPT);
}

void sg_epoll_cancel(sg_loop_t *l, sg_op_t *op, int fd)
{
    struct sg_loop_epoll *e = l->e;
    if (fd < 0 || (unsigned)fd >= e->nfds)
        return;
    ep_fd_t *f = &e->fds[fd];
    if (f->rd == op) {
        f->rd = NULL;
        queue_done(e, op, -ECANCELED, false);
    }
    if (f->wr == op) {
        f->wr = NULL;
        queue_done(e, op, -ECANCELED, false);
    }
}

void sg_epoll_forget(sg_loop_t *l, int fd)
{
    struct sg_loop_epoll *e = l->e;
    if (fd >= 0 && (unsigned)fd < e->nfds)
        memset(&e->fds[fd], 0, sizeof(e->fds[fd])); /* close(2) takes it out of the epoll set */
}

void sg_epoll_buf_release(sg_loop_t *l, unsigned bid)
{
    struct sg_loop_epoll *e = l->e;
    e->free_bids[e->n_free++] = bid;
    e->bufs_held--;
}

unsigned sg_epoll_bufs_live(const sg_loop_t *l)
{
    return l->e->bufs_peak;
}

/* ---------------- progress on a ready descriptor ---------------- */

/* A send or connect waiting for room. Returns the completions delivered. */
static int do_write(sg_loop_t *l, int fd)
{
    struct sg_loop_epoll *e = l->e;
    ep_fd_t *f = &e->fds[fd];
    sg_op_t *op = f->wr;
    int res;
    if (f->wr_kind == WR_CONNECT) {
        int soerr = 0;
        socklen_t len = sizeof soerr;
        res = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 ? -errno : -soerr;
    } else {
        ssize_t r = f->wm ? sendmsg(fd, f->wm, MSG_NOSIGNAL | MSG_DONTWAIT)
                          : send(fd, f->wp, f->wn, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            f->flags &= ~F_WRITE;
            return 0;
        }
        res = r >= 0 ? (int)r : -errno;
    }
    f->wr = NULL;
    sg_ev_t ev = {.res = res, .t_ns = sg_now_ns()};
    op->fn(op, &ev);
    return 1;
}

/* recv with the kernel's receive stamp (rx_stamps): *t_ns is left 0 when the read came without one. */
static ssize_t recv_stamped(sg_loop_t *l, int fd, char *buf, int64_t *t_ns)
{
    union {
        char b[SG_LOOP_CTRL_BYTES];
        struct cmsghdr align;
    } ctrl;
    struct iovec iov = {.iov_base = buf, .iov_len = l->buf_size};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl.b, .msg_controllen = sizeof ctrl.b};
    ssize_t r = recvmsg(fd, &msg, MSG_DONTWAIT);
    if (r > 0)
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
            if ((*t_ns = sg_loop_cmsg_stamp(l, c)) != 0)
                break;
    return r;
}

/* Receives (or accepts) for the armed operation, a few a turn. Returns the completions delivered. */
static int do_read(sg_loop_t *l, int fd)
{
    struct sg_loop_epoll *e = l->e;
    ep_fd_t *f = &e->fds[fd];
    sg_op_t *op = f->rd;
    int n = 0;
    if (f->rd_kind == RD_ACCEPT) {
        for (int i = 0; i < EP_ACCEPTS_PER_TURN; i++) {
            int nfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            f = &e->fds[fd];
            if (nfd < 0) {
                if (errno == EINTR || errno == ECONNABORTED)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    f->flags &= ~F_READ;
                    return n;
                }
                f->rd = NULL;
                deliver(op, -errno, false);
                return n + 1;
            }
            deliver(op, nfd, true);
            n++;
            f = &e->fds[fd]; /* the callback may have grown the table */
            if (f->rd != op)
                return n;
        }
        queue_ready(e, fd); /* more may be waiting: next turn */
        return n;
    }
    for (int i = 0; i < EP_READS_PER_TURN; i++) {
        if (SG_UNLIKELY(e->n_free == 0)) {
            f->rd = NULL;
            deliver(op, -ENOBUFS, false);
            return n + 1;
        }
        unsigned bid = e->free_bids[e->n_free - 1];
        int64_t t_ns = 0;
        ssize_t r = l->rx_stamps ? recv_stamped(l, fd, sg_loop_buf(l, bid), &t_ns)
                                 : recv(fd, sg_loop_buf(l, bid), l->buf_size, MSG_DONTWAIT);
        if (r > 0) {
            e->n_free--;
            if (++e->bufs_held > e->bufs_peak)
                e->bufs_peak = e->bufs_held;
            bool drained = (size_t)r < l->buf_size && !(f->flags & F_HUP);
            if (drained)
                f->flags &= ~F_READ; /* the next bytes arrive as a new edge */
            sg_ev_t ev = {.res = (int)r, .bid = bid, .buf = true, .more = true, .t_ns = t_ns};
            op->fn(op, &ev);
            n++;
            f = &e->fds[fd];
            if (drained || f->rd != op)
                return n;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            f->flags &= ~F_READ;
            return n;
        }
        f->rd = NULL;
        deliver(op, r == 0 ? 0 : -errno, false);
        return n + 1;
    }
    queue_ready(e, fd);
    return n;
}

static int progress(sg_loop_t *l, int fd)
{
    struct sg_loop_epoll *e = l->e;
    ep_fd_t *f = &e->fds[fd];
    f->flags &= ~F_QUEUED;
    int n = 0;
    if (f->wr && (f->flags & F_WRITE))
        n += do_write(l, fd);
    f = &e->fds[fd];
    if (f->rd && (f->flags & F_READ))
        n += do_read(l, fd);
    return n;
}

/* ---------------- waiting ---------------- */

/*
 * Where epoll_pwait2 is refused (a seccomp profile older than it, a kernel before 5.11), a timerfd in the epoll
 * set carries the deadline in nanoseconds instead: armed at the absolute instant (again only when it changes),
 * then epoll_wait without a timeout. Without a timerfd either, epoll_wait's milliseconds, rounded down (the
 * caller's spin does the rest).
 */
static int timer_wait(struct sg_loop_epoll *e, int64_t sleep_ns)
{
    if (e->timer_fd == -1) {
        e->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)e->timer_fd};
        if (e->timer_fd >= 0 && epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->timer_fd, &ev) < 0) {
            close(e->timer_fd);
            e->timer_fd = -2;
        } else if (e->timer_fd < 0) {
            e->timer_fd = -2;
        }
    }
    if (e->timer_fd < 0)
        return epoll_wait(e->epfd, e->evs, EP_EVENTS, (int)(sleep_ns / 1000000));
    int64_t at = sg_now_ns() + sleep_ns;
    if (at != e->timer_at) {
        struct itimerspec its = {.it_value = {.tv_sec = at / 1000000000LL, .tv_nsec = at % 1000000000LL}};
        if (timerfd_settime(e->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
            return epoll_wait(e->epfd, e->evs, EP_EVENTS, (int)(sleep_ns / 1000000));
        e->timer_at = at;
    }
    return epoll_wait(e->epfd, e->evs, EP_EVENTS, -1);
}

static int ep_wait(struct sg_loop_epoll *e, int64_t sleep_ns)
{
    if (sleep_ns <= 0)
        return epoll_wait(e->epfd, e->evs, EP_EVENTS, sleep_ns < 0 ? -1 : 0);
    if (e->no_pwait2)
        return timer_wait(e, sleep_ns);
    struct timespec ts = {.tv_sec = sleep_ns / 1000000000LL, .tv_nsec = sleep_ns % 1000000000LL};
    int n = (int)syscall(SYS_epoll_pwait2, e->epfd, e->evs, EP_EVENTS, &ts, NULL, 0);
    if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
        e->no_pwait2 = true;
        return ep_wait(e, sleep_ns);
    }
    return n;
}

int sg_epoll_run_once(sg_loop_t *l, int64_t deadline_ns)
{
    struct sg_loop_epoll *e = l->e;
    int64_t t0 = sg_now_ns();
    int64_t sleep = e->n_done || e->n_ready ? 0 : sg_loop_sleep_ns(l, deadline_ns, t0);
    int64_t window = l->dense ? sg_loop_window_ns(l, sleep) : 0;
    bool waits = sleep != 0;
    if (waits)
        l->waits++;
    if (window) {
        /* coalescing (sg_loop.h): completions come more often than once a window, so let more of them gather */
        l->coalesced++;
        l->coalesced_ns += (uint64_t)window;
        sg_loop_nap(window);
        sleep = sg_loop_sleep_ns(l, deadline_ns, sg_now_ns());
    }
    int nev = ep_wait(e, sleep);
    if (nev < 0) {
        if (errno != EINTR)
            return -errno;
        nev = 0;
    }
    if (waits)
        sg_loop_note_density(l, t0, window, nev > 0);
    /* note the whole batch first (see the top of the file) */
    for (int i = 0; i < nev; i++) {
        int fd = (int)e->evs[i].data.u64;
        uint32_t ev = e->evs[i].events;
        if (fd == l->wake_fd || fd == e->timer_fd) {
            uint64_t v;
            ssize_t r = read(fd, &v, sizeof v);
            (void)r; /* waking is all they are for */
            if (fd == e->timer_fd)
                e->timer_at = 0; /* fired: the next wait arms it again */
            continue;
        }
        ep_fd_t *f = &e->fds[fd];
        if (!(f->flags & F_REG))
            continue;
        if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            f->flags |= F_READ;
        if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
            f->flags |= F_WRITE;
        if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            f->flags |= F_HUP;
        if ((f->rd && (f->flags & F_READ)) || (f->wr && (f->flags & F_WRITE)))
            queue_ready(e, fd);
    }
    int n = 0;
    /* completions of operations started since the last turn, in the order they were started */
    if (e->n_done) {
        ep_done_t *d = e->done;
        unsigned nd = e->n_done, cap = e->cap_done;
        e->done = e->done2;
        e->cap_done = e->cap_done2;
        e->done2 = d;
        e->cap_done2 = cap;
        e->n_done = 0;
        for (unsigned i = 0; i < nd; i++)
            d[i].op->fn(d[i].op, &d[i].ev);
        n += (int)nd;
    }
    /* descriptors that can make progress; those queued again meanwhile wait for the next turn */
    unsigned nr = e->n_ready;
    for (unsigned i = 0; i < nr; i++)
        n += progress(l, e->ready[i]);
    if (nr) { /* (with none, ready may not be allocated yet) */
        memmove(e->ready, e->ready + nr, (e->n_ready - nr) * sizeof(*e->ready));
        e->n_ready -= nr;
    }
    return n;
}

/* ---------------- life ---------------- */

int sg_epoll_init(sg_loop_t *l)
{
    struct sg_loop_epoll *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->timer_fd = -1;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    e->free_bids = malloc(l->buf_count * sizeof(*e->free_bids));
    if (e->epfd < 0 || !e->free_bids) {
        int err = e->epfd < 0 ? -errno : -ENOMEM;
        if (e->epfd >= 0)
            close(e->epfd);
        free(e->free_bids);
        free(e);
        return err;
    }
    for (unsigned i = 0; i < l->buf_count; i++)
        e->free_bids[i] = l->buf_count - 1 - i; /* buffer 0 on top */
    e->n_free = l->buf_count;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)l->wake_fd};
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, l->wake_fd, &ev) < 0) {
        int err = -errno;
        close(e->epfd);
        free(e->free_bids);
        free(e);
        return err;
    }
    l->e = e;
    return 0;
}

void sg_epoll_destroy(sg_loop_t *l)
{
    struct sg_loop_epoll *e = l->e;
    if (e->timer_fd >= 0)
        close(e->timer_fd);
    close(e->epfd);
    free(e->fds);
    free(e->ready);
    free(e->done);
    free(e->done2);
    free(e->free_bids);
    free(e);
    l->e = NULL;
}
