/* bench/floor/relay.c — the kernel's floor for a proxied request, for bench/run's "floor relay" row.
 *
 *   relay LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT [unpinned]
 *
 * What a proxy cannot avoid: accept browser connections on 127.0.0.1:LISTEN_PORT, read a request,
 * write it to a pooled keep-alive upstream connection, read the answer and write it back. Threaded
 * like the gateway: one epoll loop per CPU in the affinity mask, each kept on its CPU (when there is
 * more than one) with its own SO_REUSEPORT listener; SO_INCOMING_CPU on a loop's listener gives it the
 * connections whose packets its CPU processes (what the gateway's ConnectionSteering does); `unpinned`
 * leaves the loops to the scheduler (the gateway's GATEHOUSE_CPU_AFFINITY=off). Each loop
 * keeps its own pool of idle upstream connections (as many as it ever needed at once).
 *
 * Deliberately NOT done — the work this leaves out is the work a gateway adds above the floor:
 *   - no parsing of the request beyond finding the end of its head ("\r\n\r\n"): no method, target,
 *     header or body handling (a request with a body is not supported: its body would be taken for
 *     the next request), no routing, no limits but the buffer size;
 *   - no parsing of the answer beyond the end of its head and its Content-Length (an answer without
 *     one, chunked or ending at close, closes the connections; answers to HEAD and 1xx are not
 *     understood); an upstream's `Connection: close` is not honoured (noticed once the connection
 *     is idle in the pool and closed);
 *   - no authentication, no session, no cookie or header rewriting, no X-Forwarded-*, no logging,
 *     no timeouts, no error answers (a failure closes the client's connection).
 * It is enough for wrk's keep-alive GETs to an upstream that answers with Content-Length.
 * Edge-triggered epoll, non-blocking sockets; a read shorter than the space offered means the socket
 * was drained (as nginx assumes), so the common request costs read, write, read, write and the
 * epoll_waits, nothing else.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF 16384

enum kind { LISTENER, CLIENT, UPSTREAM };

struct conn {
    enum kind kind;
    int fd, closed;
    struct conn *peer;      /* client <-> upstream while a request is in flight */
    struct conn *next;      /* upstream: the idle pool; any: the loop's list of closed conns */
    char buf[BUF];          /* bytes read, not yet relayed */
    size_t len;
    char *out;              /* bytes a short write left (sent on EPOLLOUT) */
    size_t out_len, out_off;
    long need;              /* upstream: bytes of the answer still to relay; -1 until its head is read */
    int full;               /* client: stopped reading with a full buffer */
};

struct loop {
    int ep, cpu;
    struct conn *idle, *dead;
};

static struct sockaddr_in upstream_addr;
static int listen_port;

static void kill_conn(struct loop *l, struct conn *c) {
    if (!c || c->closed) return;
    c->closed = 1;
    close(c->fd);
    if (c->kind == UPSTREAM && !c->peer) {          /* idle: out of the pool */
        for (struct conn **p = &l->idle; *p; p = &(*p)->next)
            if (*p == c) { *p = c->next; break; }
    }
    struct conn *peer = c->peer;
    c->peer = NULL;
    if (peer) { peer->peer = NULL; kill_conn(l, peer); }
    c->next = l->dead;                               /* freed after this batch of events */
    l->dead = c;
}

/* Writes data to c, keeping what the socket did not take; -1 on a failed connection. */
static int send_to(struct conn *c, const char *data, size_t n) {
    ssize_t w = c->out_len ? 0 : write(c->fd, data, n);
    if (w < 0) { if (errno != EAGAIN) return -1; w = 0; }
    if ((size_t)w < n) {
        char *o = realloc(c->out, c->out_len + n - w);
        if (!o) return -1;
        memcpy(o + c->out_len, data + w, n - w);
        c->out = o; c->out_len += n - w;
    }
    return 0;
}

/* Reads into c->buf: >0 bytes read, 0 drained or full, -1 closed or failed. Sets *drained. */
static ssize_t fill(struct conn *c, int *drained) {
    size_t room = BUF - c->len;
    *drained = 0;
    if (room == 0) return 0;
    ssize_t r = read(c->fd, c->buf + c->len, room);
    if (r < 0 && errno == EAGAIN) { *drained = 1; return 0; }
    if (r <= 0) return -1;
    c->len += r;
    if ((size_t)r < room) *drained = 1;
    return r;
}

static struct conn *new_conn(struct loop *l, enum kind kind, int fd) {
    struct conn *c = calloc(1, sizeof *c);
    if (!c) { close(fd); return NULL; }
    c->kind = kind; c->fd = fd; c->need = -1;
    struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c };
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) < 0) { close(fd); free(c); return NULL; }
    return c;
}

static struct conn *take_upstream(struct loop *l) {
    struct conn *u = l->idle;
    if (u) { l->idle = u->next; u->next = NULL; return u; }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    if (fd < 0) return NULL;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&upstream_addr, sizeof upstream_addr) < 0 && errno != EINPROGRESS) {
        close(fd); return NULL;
    }
    return new_conn(l, UPSTREAM, fd);  /* a request written before the handshake ends waits in out */
}

static void read_client(struct loop *l, struct conn *c);

/* Sends the client's next complete request head to an upstream connection, when none is in flight. */
static void dispatch(struct loop *l, struct conn *c) {
    if (c->closed || c->peer) return;
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (!end) { if (c->len == BUF) kill_conn(l, c); return; }   /* a head larger than the buffer */
    size_t head = end + 4 - c->buf;
    struct conn *u = take_upstream(l);
    if (!u) { kill_conn(l, c); return; }
    c->peer = u; u->peer = c; u->need = -1; u->len = 0;
    if (send_to(u, c->buf, head) < 0) { kill_conn(l, c); return; }
    memmove(c->buf, c->buf + head, c->len - head);
    c->len -= head;
    if (c->full) read_client(l, c);     /* room again for what the client sent meanwhile */
}

static void read_client(struct loop *l, struct conn *c) {
    int drained = 0;
    c->full = 0;
    while (!c->closed && !drained) {
        ssize_t r = fill(c, &drained);
        if (r < 0) { kill_conn(l, c); return; }
        if (r == 0 && !drained) { c->full = 1; break; }     /* buffer full: resumed by dispatch */
    }
    dispatch(l, c);
}

/* Content-Length of an answer head (without its final CRLF CRLF), or -1. */
static long content_length(const char *head, size_t n) {
    const char *p = head, *end = head + n;
    while ((p = memchr(p, '\n', end - p)) && ++p < end) {
        if (end - p > 15 && strncasecmp(p, "content-length:", 15) == 0) return strtol(p + 15, NULL, 10);
    }
    return -1;
}

/* Relays what the upstream connection u has for its client, reading until the socket is drained. */
static void relay(struct loop *l, struct conn *u) {
    int drained = 0;
    while (!u->closed) {
        struct conn *c = u->peer;
        if (!c) {                                   /* idle in the pool: only a close is expected */
            char b[64];
            ssize_t r = read(u->fd, b, sizeof b);
            if (!(r < 0 && errno == EAGAIN)) kill_conn(l, u);
            return;
        }
        if (c->out_len) return;                     /* the client is slow: resumed by its EPOLLOUT */
        if (u->len == 0 && drained) return;
        if (u->len == 0 || u->need < 0) {
            ssize_t r = fill(u, &drained);
            if (r < 0) { kill_conn(l, u); return; }
            if (r == 0 && !drained) { kill_conn(l, u); return; }  /* answer head larger than the buffer */
            if (r == 0) return;
        }
        if (u->need < 0) {
            char *end = memmem(u->buf, u->len, "\r\n\r\n", 4);
            if (!end) continue;
            long body = content_length(u->buf, end + 2 - u->buf);
            if (body < 0) { kill_conn(l, u); return; }
            u->need = (end + 4 - u->buf) + body;
        }
        size_t n = u->len < (size_t)u->need ? u->len : (size_t)u->need;
        if (send_to(c, u->buf, n) < 0) { kill_conn(l, c); return; }
        memmove(u->buf, u->buf + n, u->len - n);
        u->len -= n; u->need -= n;
        if (u->need == 0) {                         /* answer complete: back to the pool */
            if (u->len) { kill_conn(l, u); return; }  /* more than the answer: not a connection to reuse */
            u->peer = NULL; c->peer = NULL; u->need = -1;
            u->next = l->idle; l->idle = u;
            dispatch(l, c);                         /* a pipelined request already read */
            return;
        }
    }
}

/* EPOLLOUT: send what a short write left, then resume what waited for it. */
static void flush(struct loop *l, struct conn *c) {
    if (!c->out_len) return;
    ssize_t w = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
    if (w < 0) { if (errno != EAGAIN) kill_conn(l, c); return; }
    c->out_off += w;
    if (c->out_off < c->out_len) return;
    free(c->out); c->out = NULL; c->out_len = c->out_off = 0;
    if (c->kind == CLIENT && c->peer) relay(l, c->peer);
}

static void accept_all(struct loop *l, int lfd) {
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK), one = 1;
        if (fd < 0) return;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = new_conn(l, CLIENT, fd);
        if (c) read_client(l, c);       /* the request may be there already */
    }
}

static void *run(void *arg) {
    struct loop *l = arg;
    if (l->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set); CPU_SET(l->cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (l->cpu >= 0) setsockopt(lfd, SOL_SOCKET, SO_INCOMING_CPU, &l->cpu, sizeof l->cpu);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(listen_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 4096) < 0) {
        perror("relay: listen"); exit(1);
    }
    struct conn listener = { .kind = LISTENER, .fd = lfd };
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &listener }, evs[256];
    epoll_ctl(l->ep, EPOLL_CTL_ADD, lfd, &ev);
    for (;;) {
        int n = epoll_wait(l->ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            uint32_t e = evs[i].events;
            if (c->kind == LISTENER) { accept_all(l, c->fd); continue; }
            if (c->closed) continue;
            if (e & EPOLLOUT) flush(l, c);
            if (c->closed) continue;
            if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                if (c->kind == CLIENT) read_client(l, c); else relay(l, c);
            }
        }
        while (l->dead) { struct conn *d = l->dead; l->dead = d->next; free(d->out); free(d); }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "unpinned") != 0)) {
        fprintf(stderr, "usage: relay LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT [unpinned]\n"); return 2;
    }
    int pin = argc == 4;
    listen_port = atoi(argv[1]);
    upstream_addr.sin_family = AF_INET;
    upstream_addr.sin_port = htons(atoi(argv[3]));
    if (inet_pton(AF_INET, argv[2], &upstream_addr.sin_addr) != 1) {
        fprintf(stderr, "relay: UPSTREAM_HOST must be an IPv4 address\n"); return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    int count = CPU_COUNT(&set), k = 0;
    if (count < 1) count = 1;
    struct loop *loops = calloc(count, sizeof *loops);
    pthread_t *threads = calloc(count, sizeof *threads);
    for (int cpu = 0; cpu < CPU_SETSIZE && k < count; cpu++) {
        if (count > 1 && !CPU_ISSET(cpu, &set)) continue;
        loops[k].cpu = pin && count > 1 ? cpu : -1;   /* one CPU: nothing to choose, as the gateway */
        loops[k].ep = epoll_create1(0);
        k++;
    }
    for (int i = 0; i < count; i++) pthread_create(&threads[i], NULL, run, &loops[i]);
    for (int i = 0; i < count; i++) pthread_join(threads[i], NULL);
    return 0;
}
