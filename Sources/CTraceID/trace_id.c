// Fresh W3C trace ids (include/ctraceid.h): SipHash-1-3 of a per-thread counter under a per-thread
// random key.
//
// In C for its thread-local state: one shared counter was an atomic add on a cache line every
// event loop wrote for every request, and Swift's `Hasher` cost three seeded hashers per trace.
// Unpredictable without the key (a keyed PRF of a counter), unique per thread until the 64-bit
// counter wraps.

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>
#include "ctraceid.h"

static __thread uint64_t gatehouse_trace_state[3];  // key 0, key 1, counter
static __thread int gatehouse_trace_seeded;

#define GATEHOUSE_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define GATEHOUSE_SIPROUND                                                                      \
    do {                                                                                        \
        v0 += v1; v1 = GATEHOUSE_ROTL(v1, 13); v1 ^= v0; v0 = GATEHOUSE_ROTL(v0, 32);           \
        v2 += v3; v3 = GATEHOUSE_ROTL(v3, 16); v3 ^= v2;                                        \
        v0 += v3; v3 = GATEHOUSE_ROTL(v3, 21); v3 ^= v0;                                        \
        v2 += v1; v1 = GATEHOUSE_ROTL(v1, 17); v1 ^= v2; v2 = GATEHOUSE_ROTL(v2, 32);           \
    } while (0)

// SipHash-1-3 of one 8-byte message (the reference algorithm with c = 1, d = 3).
static uint64_t gatehouse_siphash13_u64(uint64_t k0, uint64_t k1, uint64_t m) {
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
    v3 ^= m; GATEHOUSE_SIPROUND; v0 ^= m;
    const uint64_t last = 8ULL << 56;
    v3 ^= last; GATEHOUSE_SIPROUND; v0 ^= last;
    v2 ^= 0xff; GATEHOUSE_SIPROUND; GATEHOUSE_SIPROUND; GATEHOUSE_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

// The thread's key and counter from getrandom; 0 when the kernel had no randomness to give (the
// caller then uses its own generator).
static int gatehouse_trace_seed(void) {
    size_t filled = 0;
    unsigned char *bytes = (unsigned char *)gatehouse_trace_state;
    while (filled < sizeof gatehouse_trace_state) {
        ssize_t n = getrandom(bytes + filled, sizeof gatehouse_trace_state - filled, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return 0;
        }
        filled += (size_t)n;
    }
    gatehouse_trace_seeded = 1;
    return 1;
}

int gatehouse_trace_next3(uint64_t *a, uint64_t *b, uint64_t *c) {
    if (!gatehouse_trace_seeded && !gatehouse_trace_seed()) return 0;
    uint64_t k0 = gatehouse_trace_state[0], k1 = gatehouse_trace_state[1], n = gatehouse_trace_state[2];
    gatehouse_trace_state[2] = n + 3;
    *a = gatehouse_siphash13_u64(k0, k1, n);
    *b = gatehouse_siphash13_u64(k0, k1, n + 1);
    *c = gatehouse_siphash13_u64(k0, k1, n + 2);
    if (*a == 0) *a = 1;
    if (*b == 0) *b = 1;
    if (*c == 0) *c = 1;
    return 1;
}

#undef GATEHOUSE_SIPROUND
#undef GATEHOUSE_ROTL

