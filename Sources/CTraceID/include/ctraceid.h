// Fresh W3C trace ids from a per-thread keyed generator (see trace_id.c).
#ifndef GATEHOUSE_CTRACEID_H
#define GATEHOUSE_CTRACEID_H

#include <stdint.h>

// Three 64-bit values, none zero: SipHash-1-3 of the calling thread's counter under its random key
// (drawn from getrandom on the thread's first call). 0, leaving them untouched, when the kernel
// had no randomness to give.
int gatehouse_trace_next3(uint64_t *a, uint64_t *b, uint64_t *c);

#endif
