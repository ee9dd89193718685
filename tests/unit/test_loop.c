/*
 * The event loop's contract (sg_loop.h), checked on both backends:
 *   - receives: many socket pairs receiving at once, every byte once and in order; io_uring's provided buffers
 *     start at SG_LOOP_BUFS_FIRST and double on ENOBUFS up to the count asked for; epoll holds only what it uses;
 *   - accept, connect, short sends of a large buffer and the end of stream over TCP on 127.0.0.1;
 *   - a completion never comes from inside the call that started the operation;
 *   - cancel ends a pending receive and a pending connect once with -ECANCELED;
 *   - a refused connect, a send on a reset connection, a wake from another thread and a deadline;
 *   - a descriptor closed and its number reused at once gets its own events only;
 *   - coalescing: completions arriving within the window come back from one turn, and a deadline inside the
 *     window is not overslept (io_uring's kernel minimum wait, and the sleep of epoll and older kernels).
 */
#define _GNU_SOURCE
#include "loop_int.h" /* sg_uring_set_min_wait */
#include "sg_loop.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define PAIRS 200
#define ROUNDS 3
#define CHUNK 1000

static const char *be_name;

typedef struct {
    sg_op_t op;
    sg_loop_t *l;
    int fd;
    bool armed;
    size_t got;
    unsigned char next; /* the byte value expected next */
    int bad;
    int enobufs;
    int eof;
    int ends;     /* completions with more=false */
    int last;     /* res of the last completion */
    int64_t t_ns; /* the last receive's stamp (rx_stamps) */
    int stamped;  /* receives that came with one */
    bool inside;  /* set while the call that arms it runs: a completion then is a contract breach */
} rx_t;

static void on_rx(sg_op_t *op, const sg_ev_t *ev)
{
    rx_t *r = SG_CONTAINER_OF(op, rx_t, op);
    if (r->inside)
        r->bad++;
    r->last = ev->res;
    if (ev->res > 0 && ev->buf) {
        const unsigned char *p = (const unsigned char *)sg_loop_data(r->l, ev);
        for (int i = 0; i < ev->res; i++)
            if (p[i] != r->next++)
                r->bad++;
        r->got += (size_t)ev->res;
        r->t_ns = ev->t_ns;
        r->stamped += ev->t_ns != 0;
        if (!r->l->rx_stamps && (ev->t_ns != 0 || ev->off != 0))
            r->bad++; /* a plain receive has neither */
        sg_loop_buf_release(r->l, ev->bid);
    } else if (ev->res == -ENOBUFS) {
        r->enobufs++;
    } else if (ev->res == 0) {
        r->eof++;
    } else if (ev->res < 0 && ev->res != -ECANCELED) {
        r->bad++;
    }
    if (!ev->more) {
        r->armed = false;
        r->ends++;
    }
}

static void arm(sg_loop_t *l, rx_t *r)
{
    r->inside = true;
    sg_loop_recv(l, &r->op, r->fd);
    r->inside = false;
    r->armed = true;
}

/* Arm whichever receives have ended (multishot stops on ENOBUFS) and run the loop until every one of the n has
 * want bytes. */
static void receive_all(sg_loop_t *l, rx_t *rx, int n, size_t want)
{
    for (int spins = 0; spins < 5000; spins++) {
        bool done = true;
        for (int i = 0; i < n; i++) {
            if (!rx[i].armed && rx[i].got < want)
                arm(l, &rx[i]);
            done = done && rx[i].got == want;
        }
        if (done)
            return;
        CHECK(sg_loop_run_once(l, sg_now_ns() + 1000000) >= 0);
    }
}

static int hook_calls;
static void hook(void *arg)
{
    (void)arg;
    hook_calls++;
}

static void test_buffers(sg_io_backend_t be, bool stamps)
{
    sg_loop_t l;
    int err = sg_loop_init(&l, be, 64, 1024, 512);
    CHECK_EQ_INT(err, 0);
    if (err)
        return;
    l.rx_stamps = stamps; /* recvmsg: the payload behind the control data, the same bytes */
    l.before_submit = hook;
    hook_calls = 0;
    if (be == SG_IO_URING)
        CHECK_EQ_INT(sg_loop_bufs_live(&l), SG_LOOP_BUFS_FIRST);

    static rx_t rx[PAIRS];
    int peer[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        int sv[2];
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        rx[i] = (rx_t){.op.fn = on_rx, .l = &l, .fd = sv[0]};
        peer[i] = sv[1];
    }
    unsigned char buf[CHUNK];
    int enobufs = 0;
    for (int round = 0; round < ROUNDS; round++) {
        /* every pair has data at once: far more receives than the first buffers */
        for (int i = 0; i < PAIRS; i++) {
            for (int k = 0; k < CHUNK; k++)
                buf[k] = (unsigned char)(round * CHUNK + k);
            CHECK_EQ_INT(write(peer[i], buf, CHUNK), CHUNK);
        }
        size_t want = (size_t)(round + 1) * CHUNK;
        receive_all(&l, rx, PAIRS, want);
        for (int i = 0; i < PAIRS; i++)
            CHECK_EQ_INT(rx[i].got, want);
    }
    for (int i = 0; i < PAIRS; i++) {
        CHECK_EQ_INT(rx[i].bad, 0);
        enobufs += rx[i].enobufs;
    }
    CHECK(hook_calls > 0);
    if (be == SG_IO_URING) {
        /* the first 64 ran out, so the kernel got more; never more than the count asked for */
        CHECK(enobufs > 0);
        CHECK(sg_loop_bufs_live(&l) > SG_LOOP_BUFS_FIRST);
        CHECK(sg_loop_bufs_live(&l) <= 1024);
    } else {
        /* each buffer goes back inside its callback: one is enough */
        CHECK_EQ_INT(enobufs, 0);
        CHECK_EQ_INT(sg_loop_bufs_live(&l), 1);
    }
    for (int i = 0; i < PAIRS; i++) {
        sg_loop_close(&l, rx[i].fd);
        close(peer[i]);
    }
    sg_loop_destroy(&l);
}

/* A count below the first batch: all of them at once (io_uring), and no growth past it. */
static void test_few_buffers(sg_io_backend_t be)
{
    sg_loop_t l;
    int err = sg_loop_init(&l, be, 8, 4, 256);
    CHECK_EQ_INT(err, 0);
    if (err)
        return;
    if (be == SG_IO_URING)
        CHECK_EQ_INT(sg_loop_bufs_live(&l), 4);
    static rx_t rx[16];
    int peer[16];
    for (int i = 0; i < 16; i++) {
        int sv[2];
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        rx[i] = (rx_t){.op.fn = on_rx, .l = &l, .fd = sv[0]};
        peer[i] = sv[1];
        unsigned char b[100];
        for (int k = 0; k < 100; k++)
            b[k] = (unsigned char)k;
        CHECK_EQ_INT(write(peer[i], b, sizeof b), 100);
    }
    receive_all(&l, rx, 16, 100);
    for (int i = 0; i < 16; i++) {
        CHECK_EQ_INT(rx[i].got, 100);
        CHECK_EQ_INT(rx[i].bad, 0);
        sg_loop_close(&l, rx[i].fd);
        close(peer[i]);
    }
    CHECK(sg_loop_bufs_live(&l) <= 4);
    sg_loop_destroy(&l);
}

/* ---------------- TCP: accept, connect, sends, end of stream ---------------- */

typedef struct {
    sg_op_t op;
    int res;
    int count;
    bool inside;
    int bad;
    int fds[8];
    int n_fds;
    bool more;
    int64_t t_ns; /* the last completion's time (sends: when it went) */
} one_t;

static void on_one(sg_op_t *op, const sg_ev_t *ev)
{
    one_t *o = SG_CONTAINER_OF(op, one_t, op);
    if (o->inside)
        o->bad++;
    o->res = ev->res;
    o->more = ev->more;
    o->t_ns = ev->t_ns;
    o->count++;
    if (ev->res >= 0 && o->n_fds < 8)
        o->fds[o->n_fds++] = ev->res;
}

static int listener(struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *a;
    if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof *a) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)a, &len) < 0)
        return -1;
    return fd;
}

static void run_until(sg_loop_t *l, const int *count, int want)
{
    int64_t end = sg_now_ns() + 5000000000LL;
    while (*count < want && sg_now_ns() < end)
        CHECK(sg_loop_run_once(l, sg_now_ns() + 10000000) >= 0);
}

static void run_until_got(sg_loop_t *l, rx_t *r, size_t want)
{
    int64_t end = sg_now_ns() + 5000000000LL;
    while (r->got < want && sg_now_ns() < end) {
        if (!r->armed)
            arm(l, r);
        CHECK(sg_loop_run_once(l, sg_now_ns() + 10000000) >= 0);
    }
}

#define BIG (4 << 20)

static void test_tcp(sg_io_backend_t be, bool stamps)
{
    sg_loop_t l;
    int err = sg_loop_init(&l, be, 64, 64, 4096);
    CHECK_EQ_INT(err, 0);
    if (err)
        return;
    l.rx_stamps = stamps;
    struct sockaddr_in a;
    int lfd = listener(&a);
    CHECK(lfd >= 0);
    one_t acc = {.op.fn = on_one}, con = {.op.fn = on_one}, snd = {.op.fn = on_one};
    acc.inside = true;
    sg_loop_accept(&l, &acc.op, lfd);
    acc.inside = false;
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    con.inside = true;
    sg_loop_connect(&l, &con.op, cfd, (struct sockaddr *)&a, sizeof a);
    con.inside = false;
    run_until(&l, &con.count, 1);
    run_until(&l, &acc.count, 1);
    CHECK_EQ_INT(con.count, 1);
    CHECK_EQ_INT(con.res, 0);
    CHECK_EQ_INT(acc.count, 1);
    CHECK(acc.more);
    CHECK(acc.n_fds == 1);
    CHECK_EQ_INT(acc.bad + con.bad, 0);
    int sfd = acc.fds[0];
    if (stamps)
        CHECK_EQ_INT(sg_loop_stamp_socket(sfd), 0);

    /* 4 MiB from the client, far past the socket buffers: short sends, each continued from where it stopped */
    unsigned char *big = malloc(BIG);
    for (int i = 0; i < BIG; i++)
        big[i] = (unsigned char)i;
    rx_t rx = {.op.fn = on_rx, .l = &l, .fd = sfd};
    arm(&l, &rx);
    size_t off = 0;
    int sends = 0;
    int64_t end = sg_now_ns() + 10000000000LL;
    while ((off < BIG || rx.got < BIG) && sg_now_ns() < end) {
        if (off < BIG && snd.count == sends) {
            snd.inside = true;
            sg_loop_send(&l, &snd.op, cfd, big + off, BIG - off);
            snd.inside = false;
            sends++;
        }
        CHECK(sg_loop_run_once(&l, sg_now_ns() + 10000000) >= 0);
        if (snd.count == sends && snd.res > 0 && off < BIG && (size_t)snd.res <= BIG - off) {
            off += (size_t)snd.res;
            snd.res = 0;
        }
        if (!rx.armed && rx.got < BIG)
            arm(&l, &rx);
    }
    CHECK_EQ_INT(off, BIG);
    CHECK_EQ_INT(rx.got, BIG);
    /* a send completion says when it went: after the run began, not after now */
    CHECK(snd.t_ns > end - 10000000000LL && snd.t_ns <= sg_now_ns());
    CHECK_EQ_INT(rx.bad, 0);
    CHECK_EQ_INT(snd.bad, 0);
    CHECK(sends > 1); /* the kernel took it in pieces */
    if (stamps)
        CHECK(rx.stamped > 0);
    else
        CHECK_EQ_INT(rx.stamped, 0);
    free(big);

    /* the client's FIN ends the server's receive with 0, once */
    if (!rx.armed)
        arm(&l, &rx); /* io_uring's multishot ends whenever its buffers run out */
    int ends = rx.ends;
    shutdown(cfd, SHUT_WR);
    run_until(&l, &rx.ends, ends + 1);
    CHECK_EQ_INT(rx.eof, 1);
    CHECK_EQ_INT(rx.ends, ends + 1);

    /* a reset connection: the send fails with an error, not a hang */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(sfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    sg_loop_close(&l, sfd);
    usleep(10000);
    int fails = 0;
    for (int i = 0; i < 3 && fails == 0; i++) {
        int before = snd.count;
        sg_loop_send(&l, &snd.op, cfd, "x", 1);
        run_until(&l, &snd.count, before + 1);
        fails += snd.res < 0;
    }
    CHECK(fails == 1);
    sg_loop_close(&l, cfd);

    /* a refused connect: the port of a closed listener (its accept cancelled first: io_uring holds the socket
     * open while an operation uses it) */
    sg_loop_cancel(&l, &acc.op, lfd);
    run_until(&l, &acc.count, 2);
    CHECK_EQ_INT(acc.count, 2);
    CHECK_EQ_INT(acc.res, -ECANCELED);
    CHECK(!acc.more);
    sg_loop_close(&l, lfd);
    int rfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    one_t ref = {.op.fn = on_one};
    sg_loop_connect(&l, &ref.op, rfd, (struct sockaddr *)&a, sizeof a);
    run_until(&l, &ref.count, 1);
    CHECK_EQ_INT(ref.count, 1);
    CHECK_EQ_INT(ref.res, -ECONNREFUSED);
    sg_loop_close(&l, rfd);
    sg_loop_destroy(&l);
}

/*
 * A received buffer carries the kernel's receive stamp, on CLOCK_MONOTONIC: a byte written at t is stamped
 * within a few hundred microseconds of t (20-30 us on loopback), even when the loop reaps it 30 ms later, which is
 * what a user-space clock read at the callback would say.
 */
static void test_rx_stamp(sg_io_backend_t be)
{
    sg_loop_t l;
    int err = sg_loop_init(&l, be, 64, 64, 4096);
    CHECK_EQ_INT(err, 0);
    if (err)
        return;
    l.rx_stamps = true;
    struct sockaddr_in a;
    int lfd = listener(&a);
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(lfd >= 0 && cfd >= 0);
    CHECK_EQ_INT(connect(cfd, (struct sockaddr *)&a, sizeof a), 0);
    int sfd = accept(lfd, NULL, NULL);
    CHECK(sfd >= 0);
    CHECK_EQ_INT(sg_loop_stamp_socket(sfd), 0);
    rx_t rx = {.op.fn = on_rx, .l = &l, .fd = sfd};
    arm(&l, &rx);
    /* the first segments after turning stamps on may come without one: the kernel switches its stamping on
     * lazily (a deferred static key), so warm up until one comes */
    unsigned char b = 0;
    size_t warm = 0;
    while (rx.stamped == 0 && warm < 50) {
        CHECK_EQ_INT(write(cfd, &b, 1), 1);
        b++;
        run_until_got(&l, &rx, ++warm);
        if (rx.stamped == 0)
            usleep(10000);
    }
    CHECK(rx.stamped == 1);
    int64_t worst = 0, reap_gap = 0;
    for (size_t i = warm; i < warm + 5; i++) {
        b = (unsigned char)i;
        int stamped = rx.stamped;
        int64_t t0 = sg_now_ns();
        CHECK_EQ_INT(write(cfd, &b, 1), 1);
        int64_t t1 = sg_now_ns();
        usleep(30000);
        if (!rx.armed)
            arm(&l, &rx);
        run_until_got(&l, &rx, i + 1);
        int64_t reaped = sg_now_ns();
        if (rx.stamped != stamped + 1)
            fprintf(stderr, "test_loop (%s): write %zu came without a stamp\n", be_name, i);
        CHECK_EQ_INT(rx.stamped, stamped + 1);
        CHECK(rx.t_ns >= t0 - 100000); /* the offset's read is good to well under that */
        int64_t late = rx.t_ns - t1;
        if (late > worst)
            worst = late;
        reap_gap = reaped - t1;
    }
    if (worst >= 2000000)
        fprintf(stderr, "test_loop (%s): a stamp came %.3f ms after its write (bound 2 ms)\n", be_name,
                (double)worst / 1e6);
    CHECK(worst < 2000000);
    CHECK(reap_gap >= 30000000); /* it really was reaped late */
    CHECK_EQ_INT(rx.got, warm + 5);
    CHECK_EQ_INT(rx.bad, 0);
    /* end of stream still reads as 0 (io_uring's recvmsg gives it as a buffer with no payload) */
    if (!rx.armed)
        arm(&l, &rx);
    int ends = rx.ends;
    shutdown(cfd, SHUT_WR);
    run_until(&l, &rx.ends, ends + 1);
    CHECK_EQ_INT(rx.eof, 1);
    CHECK_EQ_INT(rx.bad, 0);
    sg_loop_close(&l, sfd);
    sg_loop_close(&l, cfd);
    close(lfd);
    sg_loop_destroy(&l);
}

/* The realtime-over-monotonic offset: steady between two reads (no step), non-zero. */
static void test_clock_sync(void)
{
    sg_loop_t l;
    CHECK_EQ_INT(sg_loop_init(&l, SG_IO_EPOLL, 8, 8, 256), 0);
    CHECK(l.rt_off_ns != 0);
    int64_t moved = sg_loop_clock_sync(&l);
    CHECK(moved < 1000000);
    /* a step of the realtime clock shows as the offset moving by it (here the loop's copy is moved instead), and
     * later stamps map with the new offset */
    int64_t off = l.rt_off_ns;
    l.rt_off_ns -= 5000000;
    moved = sg_loop_clock_sync(&l);
    CHECK(moved > 4900000 && moved < 5100000);
    CHECK(l.rt_off_ns - off < 100000 && off - l.rt_off_ns < 100000);
    struct timespec ts = {.tv_sec = 100, .tv_nsec = 5};
    CHECK(sg_loop_map_stamp(&l, &ts) == 100000000005LL - l.rt_off_ns);
    ts = (struct timespec){0};
    CHECK(sg_loop_map_stamp(&l, &ts) == 0);
    sg_loop_destroy(&l);
}

/* ---------------- cancel, reuse, wake, deadline ---------------- */

static void test_cancel(sg_io_backend_t be)
{
    sg_loop_t l;
    int err = sg_loop_init(&l, be, 64, 64, 4096);
    CHECK_EQ_INT(err, 0);
    if (err)
        return;
    int sv[2];
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    rx_t rx = {.op.fn = on_rx, .l = &l, .fd = sv[0]};
    arm(&l, &rx);
    CHECK(sg_loop_run_once(&l, 0) >= 0);
    CHECK_EQ_INT(rx.ends, 0);
    sg_loop_cancel(&l, &rx.op, sv[0]);
    run_until(&l, &rx.ends, 1);
    CHECK_EQ_INT(rx.ends, 1);
    CHECK_EQ_INT(rx.last, -ECANCELED);
    /* cancelling what already ended changes nothing */
    sg_loop_cancel(&l, &rx.op, sv[0]);
    for (int i = 0; i < 3; i++)
        CHECK(sg_loop_run_once(&l, 0) >= 0);
    CHECK_EQ_INT(rx.ends, 1);

    /* a connect that never completes (a listener whose backlog is full and a SYN that is never answered is not
     * portable): cancel it right after starting it, before the loop ran; it ends once, ECANCELED or, where the
     * kernel had already connected it, 0 */
    struct sockaddr_in a;
    int lfd = listener(&a);
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    one_t con = {.op.fn = on_one};
    sg_loop_connect(&l, &con.op, cfd, (struct sockaddr *)&a, sizeof a);
    CHECK(sg_loop_flush(&l) == 0);
    sg_loop_cancel(&l, &con.op, cfd);
    run_until(&l, &con.count, 1);
    for (int i = 0; i < 3; i++)
        CHECK(sg_loop_run_once(&l, 0) >= 0);
    CHECK_EQ_INT(con.count, 1);
    CHECK(con.res == -ECANCELED || con.res == 0);

    /* closed and its number reused at once: the new socket's receive sees only its own bytes */
    sg_loop_close(&l, sv[0]);
    close(sv[1]);
    int sv2[2];
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv2), 0);
    CHECK_EQ_INT(sv2[0], sv[0]); /* the lowest free number: the one just closed */
    rx_t rx2 = {.op.fn = on_rx, .l = &l, .fd = sv2[0]};
    arm(&l, &rx2);
    unsigned char b[3] = {0, 1, 2};
    CHECK_EQ_INT(write(sv2[1], b, 3), 3);
    int64_t end = sg_now_ns() + 2000000000LL;
    while (rx2.got < 3 && sg_now_ns() < end)
        CHECK(sg_loop_run_once(&l, sg_now_ns() + 10000000) >= 0);
    CHECK_EQ_INT(rx2.got, 3);
    CHECK_EQ_INT(rx2.bad, 0);
    sg_loop_close(&l, sv2[0]);
    close(sv2[1]);
    sg_loop_close(&l, cfd);
    close(lfd);
    sg_loop_destroy(&l);
}

static void *waker(void *arg)
{
    usleep(50000);
    sg_loop_wake(arg);
    return NULL;
}

static void test_wake_deadline(sg_io_backend_t be)
{
    sg_loop_t l;
    int err = sg_loop_init(&l, be, 64, 64, 4096);
    CHECK_EQ_INT(err, 0);
    if (err)
        return;
    /* a deadline 20 ms out: returns at it, not before, and not much after */
    for (int i = 0; i < 3; i++) {
        int64_t deadline = sg_now_ns() + 20000000;
        int64_t now;
        do {
            CHECK(sg_loop_run_once(&l, deadline) >= 0);
            now = sg_now_ns();
        } while (now < deadline);
        CHECK(now >= deadline);
        /* A second wait of the whole 20 ms would be 20 ms late. Clean-clone CI (release, epoll, two tests at a time
         * on 2 cores) once returned over 5 ms late: bound 15 ms. */
        if (now - deadline >= 15000000)
            fprintf(stderr, "test_loop: %s: returned %.2f ms after a 20 ms deadline (bound 15 ms)\n",
                    be == SG_IO_EPOLL ? "epoll" : "io_uring", (double)(now - deadline) / 1e6);
        CHECK(now - deadline < 15000000);
    }
    /* no deadline: another thread's wake ends the wait */
    pthread_t t;
    int64_t t0 = sg_now_ns();
    CHECK_EQ_INT(pthread_create(&t, NULL, waker, &l), 0);
    CHECK(sg_loop_run_once(&l, INT64_MAX) >= 0);
    int64_t waited = sg_now_ns() - t0;
    pthread_join(t, NULL);
    CHECK(waited >= 40000000 && waited < 2000000000);
    sg_loop_destroy(&l);
}

/* Writes one byte to each of n sockets, gap_us apart, starting gap_us after it starts. */
typedef struct {
    int *fds;
    int n;
    int gap_us;
} writer_t;

static void *writer(void *arg)
{
    writer_t *wr = arg;
    for (int i = 0; i < wr->n; i++) {
        usleep((useconds_t)wr->gap_us);
        if (write(wr->fds[i], "x", 1) != 1)
            fprintf(stderr, "test_loop: writer: write failed\n");
    }
    return NULL;
}

#define CO_PAIRS 6
#define CO_WINDOW_NS 100000000LL /* 100 ms: the writes below take about 6 ms */

/* Turns until every one of the receives has its byte; returns the turns taken. */
static int co_drain(sg_loop_t *l, rx_t *rx, int n, size_t want)
{
    int turns = 0;
    for (;;) {
        bool all = true;
        for (int i = 0; i < n; i++)
            all = all && rx[i].got >= want;
        if (all || turns > 1000)
            return turns;
        CHECK(sg_loop_run_once(l, sg_now_ns() + 1000000000LL) >= 0);
        turns++;
    }
}

/*
 * Coalescing (coalesce_ns): bytes arriving on several sockets within the window come back from one
 * sg_loop_run_once, and a deadline inside the window is kept all the same. `how` names the path: io_uring's
 * kernel minimum wait, or the sleep (epoll, and io_uring told not to use the minimum wait).
 */
static void test_coalesce(sg_io_backend_t be, bool min_wait)
{
    const char *how = be == SG_IO_EPOLL ? "epoll" : min_wait ? "io_uring min-wait" : "io_uring sleep";
    sg_loop_t l;
    int err = sg_loop_init(&l, be, 64, 64, 4096);
    CHECK_EQ_INT(err, 0);
    if (err)
        return;
    if (be == SG_IO_URING) {
        sg_uring_set_min_wait(&l, min_wait);
        if (min_wait && !sg_uring_min_wait(&l)) {
            fprintf(stderr, "test_loop: this kernel has no IORING_FEAT_MIN_TIMEOUT: the min-wait path is not tested\n");
            sg_loop_destroy(&l);
            return;
        }
        CHECK_EQ_STR(sg_loop_coalesce_method(&l), strlen(sg_loop_coalesce_method(&l)),
                     min_wait ? "io_uring_min_wait" : "sleep");
    }
    int sv[CO_PAIRS][2], wfd[CO_PAIRS];
    rx_t rx[CO_PAIRS];
    memset(rx, 0, sizeof rx);
    for (int i = 0; i < CO_PAIRS; i++) {
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv[i]), 0);
        rx[i].op.fn = on_rx;
        rx[i].l = &l;
        rx[i].fd = sv[i][0];
        rx[i].next = 'x';
        wfd[i] = sv[i][1];
        arm(&l, &rx[i]);
    }
    bool sleeps = be == SG_IO_EPOLL || !min_wait;

    /* 1. Six bytes, 1 ms apart, on six sockets: all six from one turn, which returns at about the window. The
     * sleep path naps after a wait that found completions within a window of its start: say it did. */
    l.coalesce_ns = CO_WINDOW_NS;
    l.dense = true;
    uint64_t coalesced0 = l.coalesced;
    writer_t wr = {.fds = wfd, .n = CO_PAIRS, .gap_us = 1000};
    pthread_t t;
    int64_t t0 = sg_now_ns();
    CHECK_EQ_INT(pthread_create(&t, NULL, writer, &wr), 0);
    int n = sg_loop_run_once(&l, INT64_MAX);
    int64_t took = sg_now_ns() - t0;
    pthread_join(t, NULL);
    if (n != CO_PAIRS)
        fprintf(stderr,
                "test_loop: %s: one coalescing turn handed over %d of %d completions after %.1f ms (window %.0f ms)\n",
                how, n, CO_PAIRS, (double)took / 1e6, (double)CO_WINDOW_NS / 1e6);
    CHECK_EQ_INT(n, CO_PAIRS);
    CHECK(l.coalesced == coalesced0 + 1);
    if (sleeps)
        CHECK(l.dense);            /* completions within a window of the wait's start: the next turn naps too */
    co_drain(&l, rx, CO_PAIRS, 1); /* (a miss above: collect the rest) */
    for (int i = 0; i < CO_PAIRS; i++) {
        CHECK_EQ_INT(rx[i].bad, 0);
        rx[i].next = 'x';
    }

    /* 2. A deadline 10 ms away inside the 100 ms window, a byte arriving 2 ms in (round 0) or nothing (round 1):
     * the one turn is back by the deadline. */
    for (int round = 0; round < 2; round++) {
        l.coalesce_ns = CO_WINDOW_NS;
        l.dense = true;
        size_t got0 = rx[0].got;
        wr.n = round == 0 ? 1 : 0;
        wr.gap_us = 2000;
        int64_t deadline = sg_now_ns() + 10000000;
        CHECK_EQ_INT(pthread_create(&t, NULL, writer, &wr), 0);
        CHECK(sg_loop_run_once(&l, deadline) >= 0);
        int64_t now = sg_now_ns();
        pthread_join(t, NULL);
        /* without the cut it is 90 ms late; on a busy 2-core machine a turn came 8.5 ms late: bound 30 ms */
        if (now - deadline >= 30000000)
            fprintf(stderr, "test_loop: %s: deadline inside the window overslept by %.2f ms (bound 30 ms)\n", how,
                    (double)(now - deadline) / 1e6);
        CHECK(now - deadline < 30000000);
        if (sleeps && round == 1)
            CHECK(!l.dense); /* a wait that found nothing: sparse traffic, the next turn waits without a nap */
        co_drain(&l, rx, 1, got0 + (size_t)wr.n);
    }
    for (int i = 0; i < CO_PAIRS; i++) {
        CHECK_EQ_INT(rx[i].bad, 0);
        close(sv[i][1]);
    }
    for (int i = 0; i < CO_PAIRS; i++)
        sg_loop_close(&l, sv[i][0]);
    sg_loop_destroy(&l);
}

int main(void)
{
    char why[256];
    int uring = sg_loop_pick(SG_IO_URING, why, sizeof why);
    if (uring < 0)
        fprintf(stderr, "test_loop: io_uring unavailable here (%s): epoll only\n", why);
    CHECK_EQ_INT(sg_loop_pick(SG_IO_EPOLL, why, sizeof why), SG_IO_EPOLL);
    int auto_pick = sg_loop_pick(SG_IO_AUTO, why, sizeof why);
    CHECK_EQ_INT(auto_pick, uring < 0 ? SG_IO_EPOLL : SG_IO_URING);
    sg_io_backend_t bes[2] = {SG_IO_EPOLL, SG_IO_URING};
    for (int i = 0; i < (uring < 0 ? 1 : 2); i++) {
        be_name = sg_io_backend_name(bes[i]);
        int before = test_failures;
        test_buffers(bes[i], false);
        test_buffers(bes[i], true);
        test_few_buffers(bes[i]);
        test_tcp(bes[i], false);
        test_tcp(bes[i], true);
        test_rx_stamp(bes[i]);
        test_cancel(bes[i]);
        test_wake_deadline(bes[i]);
        test_coalesce(bes[i], true);
        if (bes[i] == SG_IO_URING)
            test_coalesce(bes[i], false);
        if (test_failures != before)
            fprintf(stderr, "test_loop: %d failure(s) on %s\n", test_failures - before, be_name);
    }
    test_clock_sync();
    CHECK_EQ_INT(sg_io_backend_parse("epoll"), SG_IO_EPOLL);
    CHECK_EQ_INT(sg_io_backend_parse("io_uring"), SG_IO_URING);
    CHECK_EQ_INT(sg_io_backend_parse("auto"), SG_IO_AUTO);
    CHECK_EQ_INT(sg_io_backend_parse("kqueue"), -1);
    return test_finish("test_loop");
}
