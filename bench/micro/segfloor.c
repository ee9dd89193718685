/*
 * Micro-benchmark: the kernel's floor for receiving slow streams, one token per TCP segment. A client with no
 * parsing, no records and no timing does only what any client must: N streamed requests to a server, then
 * epoll and one recv per ready connection, until every connection has closed. Its CPU per token is what surge's
 * trickle figure should be set against. Built with the project, run by hand against the bundled mock:
 *   surge mock --port 18700 --ttft-ms 5 --itl-ms 20 --output-tokens 100 &
 *   build/micro/segfloor 127.0.0.1 18700 [streams 300] [tokens 100] [window_us 1000] [quickack0 0|1] [stamps 0|1]
 * window_us: after each wait that found something, sleep that long before reading, so readiness gathers as
 * surge's coalesced wake-ups do (0: none). quickack0: TCP_QUICKACK 0 after every read (delayed ACKs; Linux
 * leaves the mode when a delayed ACK's timer fires). stamps: SO_TIMESTAMPING software receive stamps, read
 * with recvmsg as surge does. Prints tokens per client CPU-second (user+system of this process).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: segfloor HOST PORT [streams] [tokens] [window_us] [quickack0] [stamps]\n");
        return 2;
    }
    int n = argc > 3 ? atoi(argv[3]) : 300, tokens = argc > 4 ? atoi(argv[4]) : 100;
    long window_us = argc > 5 ? atol(argv[5]) : 1000;
    int quickack0 = argc > 6 ? atoi(argv[6]) : 0, stamps = argc > 7 ? atoi(argv[7]) : 0;
    if (n < 1 || tokens < 1 || window_us < 0) {
        fprintf(stderr, "segfloor: bad streams, tokens or window\n");
        return 2;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
        fprintf(stderr, "segfloor: bad address %s\n", argv[1]);
        return 2;
    }
    char body[256], req[512];
    int bl = snprintf(body, sizeof(body),
                      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true,"
                      "\"max_tokens\":%d}",
                      tokens);
    int rl = snprintf(req, sizeof(req),
                      "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                      "Connection: close\r\nContent-Length: %d\r\n\r\n%s",
                      argv[1], bl, body);
    int ep = epoll_create1(0);
    int *fds = calloc((size_t)n, sizeof(int));
    if (ep < 0 || !fds)
        return 1;
    double c0 = cpu_s(), w0 = wall_s();
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
            perror("segfloor: connect");
            return 1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (stamps) {
            int f = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
            setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &f, sizeof(f));
        }
        if (write(fd, req, (size_t)rl) != rl) {
            perror("segfloor: write");
            return 1;
        }
        struct epoll_event e = {.events = EPOLLIN, .data.fd = fd};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
        fds[i] = fd;
    }
    static char buf[65536];
    char ctl[256];
    struct epoll_event ev[512];
    long open = n, reads = 0, waits = 0, stamped = 0;
    unsigned long long bytes = 0;
    while (open > 0) {
        int k = epoll_wait(ep, ev, 512, 5000);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            fprintf(stderr, "segfloor: no progress for 5 s with %ld streams open\n", open);
            return 1;
        }
        waits++;
        if (window_us) {
            struct timespec ts = {.tv_sec = window_us / 1000000, .tv_nsec = (window_us % 1000000) * 1000};
            nanosleep(&ts, NULL);
            k = epoll_wait(ep, ev, 512, 0);
        }
        for (int i = 0; i < k; i++) {
            int fd = ev[i].data.fd;
            ssize_t r;
            if (stamps) {
                struct iovec io = {.iov_base = buf, .iov_len = sizeof(buf)};
                struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
                r = recvmsg(fd, &m, MSG_DONTWAIT);
                if (r > 0 && m.msg_controllen > 0)
                    stamped++;
            } else {
                r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
            }
            reads++;
            if (r > 0) {
                bytes += (unsigned long long)r;
                if (quickack0) {
                    int zero = 0;
                    setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero));
                }
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
                open--;
            }
        }
    }
    double cpu = cpu_s() - c0, wall = wall_s() - w0, tok = (double)n * tokens;
    printf("segfloor: %d streams x %d tokens, window %ld us, quickack0 %d, stamps %d: %.3f s CPU over %.2f s, "
           "%.0f tokens per CPU-second (%.2f us per token), %.3f reads and %.3f waits per token, %llu bytes%s\n",
           n, tokens, window_us, quickack0, stamps, cpu, wall, tok / cpu, cpu / tok * 1e6, reads / tok, waits / tok,
           bytes, stamps && !stamped ? " (no stamps came back)" : "");
    return 0;
}
