// Byte-class scans over HTTP heads, the inner loops of parsing and writing every head.
//
// In C because clang vectorises them (16 bytes a step) and Swift does not: Swift's SIMD comparison
// operators compile to one lane at a time, and its per-byte loops cost 3-5 instructions a byte. A
// proxied request runs these over its head twice (read, write) and over its answer's head twice.
// Static inline: nothing to link, and the optimiser inlines them into the Swift callers.
#ifndef GATEHOUSE_BYTE_SCAN_H
#define GATEHOUSE_BYTE_SCAN_H

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// tchar (RFC 9110 §5.6.2): "!#$%&'*+-.^_`|~", DIGIT, ALPHA; bit b of the pair for byte b < 128.
#define GATEHOUSE_TCHAR_LOW 0x03ff6cfa00000000ULL
#define GATEHOUSE_TCHAR_HIGH 0x57ffffffc7fffffeULL

static inline int gatehouse_is_tchar(uint8_t b) {
    uint64_t word = b < 64 ? GATEHOUSE_TCHAR_LOW : GATEHOUSE_TCHAR_HIGH;
    return (b < 128) & (int)((word >> (b & 63)) & 1);
}

// The number of bytes from the start of [p, p+n) that are tchar.
static inline size_t gatehouse_token_prefix(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n && gatehouse_is_tchar(p[i])) i++;
    return i;
}

// 1 when every byte of [p, p+n) may stand in a field value or reason phrase (RFC 9110 §5.5:
// VCHAR, obs-text, SP, HTAB); no early exit, so the loop vectorises.
static inline int gatehouse_is_field_value(const uint8_t *p, size_t n) {
    uint8_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        bad |= (uint8_t)(((b < 0x20) & (b != 0x09)) | (b == 0x7F));
    }
    return bad == 0;
}

// 1 when every byte of [p, p+n) is visible ASCII (VCHAR, 0x21-0x7E: a request-target sent as it
// is); no early exit, so the loop vectorises.
static inline int gatehouse_is_visible(const uint8_t *p, size_t n) {
    uint8_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        bad |= (uint8_t)((b < 0x21) | (b > 0x7E));
    }
    return bad == 0;
}

// 1 when every byte of [p, p+n) is ASCII.
static inline int gatehouse_is_ascii(const uint8_t *p, size_t n) {
    uint8_t high = 0;
    for (size_t i = 0; i < n; i++) high |= p[i];
    return high < 0x80;
}

// The offset of the first byte at or below CR (0x0D: CR, LF, HTAB and most controls) in
// [from, to), or `to`: where the head boundary scanner has to look at a byte's meaning.
static inline size_t gatehouse_find_control(const uint8_t *p, size_t from, size_t to) {
#if defined(__SSE2__)
    const __m128i cr = _mm_set1_epi8(0x0D);
    while (from + 16 <= to) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + from));
        // v <= CR (unsigned) exactly where min(v, CR) == v.
        int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v, cr), v));
        if (mask != 0) return from + (size_t)__builtin_ctz((unsigned)mask);
        from += 16;
    }
#endif
    while (from < to && p[from] > 0x0D) from++;
    return from;
}

// The offset of the first `byte` in [from, to), or `to` (the C library's memchr, which reads a
// vector at a time).
static inline size_t gatehouse_find_byte(const uint8_t *p, size_t from, size_t to, uint8_t byte) {
    if (from >= to) return to;
    const void *found = __builtin_memchr(p + from, byte, to - from);
    return found ? (size_t)((const uint8_t *)found - p) : to;
}

// The 16 lowercase hex digits of `v`, most significant first, at `out` (a trace context's ids,
// written on every proxied request: a digit at a time cost 4 instructions a digit).
static inline void gatehouse_hex64(uint64_t v, uint8_t *out) {
#if defined(__SSE2__)
    __m128i bytes = _mm_cvtsi64_si128((long long)__builtin_bswap64(v));
    const __m128i low = _mm_set1_epi8(0x0f);
    __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), low);
    __m128i nibbles = _mm_unpacklo_epi8(high, _mm_and_si128(bytes, low));
    __m128i letters = _mm_and_si128(_mm_cmpgt_epi8(nibbles, _mm_set1_epi8(9)), _mm_set1_epi8('a' - '0' - 10));
    _mm_storeu_si128((__m128i *)(void *)out, _mm_add_epi8(_mm_add_epi8(nibbles, _mm_set1_epi8('0')), letters));
#else
    for (int i = 0; i < 16; i++) {
        uint8_t nibble = (uint8_t)((v >> (60 - 4 * i)) & 0x0f);
        out[i] = (uint8_t)(nibble < 10 ? '0' + nibble : 'a' + nibble - 10);
    }
#endif
}

// 1 when [a, a+n) and [b, b+n) hold the same bytes.
static inline int gatehouse_bytes_equal(const void *a, const void *b, size_t n) {
    return __builtin_memcmp(a, b, n) == 0;
}

#endif
