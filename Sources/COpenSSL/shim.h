#ifndef GATEHOUSE_COPENSSL_SHIM_H
#define GATEHOUSE_COPENSSL_SHIM_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <time.h>
#include <ctype.h>
#include <stdlib.h>
#include <unistd.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

/* The gateway's TLS client on OpenSSL 3 (Debian libssl-dev). Macros Swift does not import
 * (SSL_CTX_set_min_proto_version, SSL_set_tlsext_host_name, SSL_set_mode…) and multi-step set-ups
 * are functions here, so the Swift side deals in one call per decision. */

/* A client context verifying peers against `bundle` (a PEM file read once, here): TLS 1.2 or newer,
 * no renegotiation, no compression, ALPN "http/1.1". Partial writes and a moving write buffer, so
 * a non-blocking write can be retried with whatever the caller still holds; buffers released while
 * a connection is idle. NULL when the bundle cannot be read: nothing is trusted then. */
static inline SSL_CTX *gatehouse_tls_client_context(const char *bundle) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) return NULL;
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1
        || SSL_CTX_load_verify_locations(ctx, bundle, NULL) != 1) {
        SSL_CTX_free(ctx);
        ERR_clear_error();
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                          | SSL_MODE_RELEASE_BUFFERS);
    static const unsigned char alpn[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn) != 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* A client connection on the connected non-blocking socket `fd` for `host`: SNI when the host is
 * a name, and the certificate must match the name (no partial wildcards) or the IP address. */
static inline SSL *gatehouse_tls_client_new(SSL_CTX *ctx, int fd, const char *host, int host_is_ip) {
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) return NULL;
    int ok = SSL_set_fd(ssl, fd) == 1;
    if (ok && host_is_ip) {
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1;
    } else if (ok) {
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1;
    }
    if (!ok) {
        SSL_free(ssl);
        ERR_clear_error();
        return NULL;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

/* Client-side session resumption: OpenSSL hands each new session (after a TLS 1.2 handshake, or
 * with a TLS 1.3 NewSessionTicket) to `on_new_session`, which owns it when it returns 1; nothing is
 * kept inside OpenSSL. */
static inline void gatehouse_tls_keep_client_sessions(SSL_CTX *ctx, int (*on_new_session)(SSL *, SSL_SESSION *)) {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
}

/* The connection's owner, for callbacks (OpenSSL's app data slot). */
static inline void gatehouse_tls_set_owner(SSL *ssl, void *owner) { SSL_set_app_data(ssl, owner); }
static inline void *gatehouse_tls_owner(const SSL *ssl) { return SSL_get_app_data(ssl); }

/* Whether the handshake just done resumed a session. */
static inline int gatehouse_tls_resumed(const SSL *ssl) { return SSL_session_reused(ssl); }

/* What an SSL_* call's result means, with errno kept for SSL_ERROR_SYSCALL. */
enum gatehouse_tls_status {
    GATEHOUSE_TLS_OK = 0,
    GATEHOUSE_TLS_WANT_READ = 1,
    GATEHOUSE_TLS_WANT_WRITE = 2,
    GATEHOUSE_TLS_CLOSED = 3,   /* close_notify, or the peer's EOF without one */
    GATEHOUSE_TLS_FAILED = 4,   /* protocol or verification failure; see gatehouse_tls_failure */
};

static inline int gatehouse_tls_classify(SSL *ssl, int result) {
    if (result > 0) return GATEHOUSE_TLS_OK;
    int error = SSL_get_error(ssl, result);
    switch (error) {
    case SSL_ERROR_WANT_READ: return GATEHOUSE_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return GATEHOUSE_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return GATEHOUSE_TLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        /* OpenSSL 3 reports an EOF without close_notify as SSL_ERROR_SSL (unexpected eof) and an
         * I/O error here; both end the connection. */
        ERR_clear_error();
        return GATEHOUSE_TLS_CLOSED;
    default:
        return GATEHOUSE_TLS_FAILED;
    }
}

/* Handshake step, either side (the connection's connect or accept state): OK when done. */
static inline int gatehouse_tls_handshake(SSL *ssl) {
    ERR_clear_error();
    return gatehouse_tls_classify(ssl, SSL_do_handshake(ssl));
}

/* Sends close_notify if the socket takes it now (never waits); the connection is not freed. */
static inline void gatehouse_tls_close_notify(SSL *ssl) {
    ERR_clear_error();
    if (SSL_is_init_finished(ssl)) (void)SSL_shutdown(ssl);
    ERR_clear_error();
}

/* Reads up to `count` bytes: > 0 bytes read, or -status. */
static inline long gatehouse_tls_read(SSL *ssl, void *buffer, long count) {
    ERR_clear_error();
    int n = SSL_read(ssl, buffer, count > 0x40000000L ? 0x40000000 : (int)count);
    if (n > 0) return n;
    int status = gatehouse_tls_classify(ssl, n);
    if (status == GATEHOUSE_TLS_FAILED && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ERR_clear_error();
        status = GATEHOUSE_TLS_CLOSED;
    }
    return -(long)status;
}

/* As gatehouse_tls_read without consuming: whether the idle connection has something to say. */
static inline long gatehouse_tls_peek(SSL *ssl) {
    unsigned char byte;
    ERR_clear_error();
    int n = SSL_peek(ssl, &byte, 1);
    if (n > 0) return n;
    int status = gatehouse_tls_classify(ssl, n);
    if (status == GATEHOUSE_TLS_FAILED) ERR_clear_error();
    return -(long)status;
}

/* Writes up to `count` bytes: > 0 bytes written, or -status. */
static inline long gatehouse_tls_write(SSL *ssl, const void *buffer, long count) {
    if (count <= 0) return 0;
    ERR_clear_error();
    int n = SSL_write(ssl, buffer, count > 0x40000000L ? 0x40000000 : (int)count);
    if (n > 0) return n;
    return -(long)gatehouse_tls_classify(ssl, n);
}

/* Why the handshake or a record failed, for the operator: the certificate check's verdict when
 * that was it, else OpenSSL's first queued error. Clears the queue. */
static inline void gatehouse_tls_failure(SSL *ssl, char *out, size_t size) {
    long verdict = SSL_get_verify_result(ssl);
    unsigned long error = ERR_peek_error();
    if (verdict != X509_V_OK) {
        snprintf(out, size, "certificate verify failed: %s", X509_verify_cert_error_string(verdict));
    } else if (error != 0) {
        ERR_error_string_n(error, out, size);
    } else {
        snprintf(out, size, "TLS failure");
    }
    ERR_clear_error();
}

/* Sends close_notify if the socket takes it now (never waits), then frees the connection. */
static inline void gatehouse_tls_free(SSL *ssl, int send_close_notify) {
    if (send_close_notify) {
        SSL_set_quiet_shutdown(ssl, 0);
        (void)SSL_shutdown(ssl);
    }
    ERR_clear_error();
    SSL_free(ssl);
}

/* True when the server chose no ALPN protocol or http/1.1 (never h2 on this HTTP/1.1 client). */
static inline int gatehouse_tls_alpn_is_http11_or_none(SSL *ssl) {
    const unsigned char *proto = NULL;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl, &proto, &length);
    return length == 0 || (length == 8 && memcmp(proto, "http/1.1", 8) == 0);
}

/* ---- The server side: the HTTPS listener (TLSTransport/TLSServerContext). ---- */

/* Session-ticket keys: [0] encrypts new tickets, [1] (the previous period's) still decrypts. */
typedef struct {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
} gatehouse_ticket_key;

/* tls-alpn-01 (RFC 8737): a name being validated and the context that presents its challenge. */
#define GATEHOUSE_TLS_ALPN_CHALLENGES 16
typedef struct {
    char name[256];
    SSL_CTX *ctx;
} gatehouse_alpn_challenge;

typedef struct {
    gatehouse_ticket_key keys[2];
    int challenge_count;
    gatehouse_alpn_challenge challenges[GATEHOUSE_TLS_ALPN_CHALLENGES];
} gatehouse_ticket_keys;

/* OpenSSL's ticket-key callback (RFC 5077 layout: name, IV, AES-256-CBC, HMAC-SHA256): 1 with the
 * current key, 2 (decrypt, then issue a fresh ticket) with the previous one, 0 for an unknown name
 * (a full handshake, never an error). */
static inline int gatehouse_tls_ticket_key(SSL *ssl, unsigned char key_name[16], unsigned char *iv,
                                           EVP_CIPHER_CTX *cipher, EVP_MAC_CTX *mac, int encrypt) {
    gatehouse_ticket_keys *keys = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    if (keys == NULL) return 0;
    int index = 0;
    if (encrypt) {
        if (RAND_bytes(iv, 16) != 1) return -1;
        memcpy(key_name, keys->keys[0].name, 16);
    } else if (CRYPTO_memcmp(key_name, keys->keys[0].name, 16) == 0) {
        index = 0;
    } else if (CRYPTO_memcmp(key_name, keys->keys[1].name, 16) == 0) {
        index = 1;
    } else {
        return 0;
    }
    gatehouse_ticket_key *key = &keys->keys[index];
    OSSL_PARAM params[3];
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key->hmac, 32);
    params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
    params[2] = OSSL_PARAM_construct_end();
    if (EVP_MAC_CTX_set_params(mac, params) != 1) return -1;
    if (encrypt) {
        if (EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, key->aes, iv) != 1) return -1;
        return 1;
    }
    if (EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, key->aes, iv) != 1) return -1;
    return index == 0 ? 1 : 2;
}

/* ALPN: http/1.1 when the client offers it; otherwise no protocol is confirmed (a client that
 * offers only h2 still gets HTTP/1.1, as nginx does without http2). */
static inline int gatehouse_tls_select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                            const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    static const unsigned char http11[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    unsigned char *chosen = NULL;
    if (SSL_select_next_proto(&chosen, outlen, http11, sizeof http11, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
        *out = chosen;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/* Defined below, with the tls-alpn-01 challenges it hands validators to. */
static inline int gatehouse_tls_client_hello(SSL *ssl, int *alert, void *arg);

enum gatehouse_tls_server_failure {
    GATEHOUSE_TLS_SERVER_CERTIFICATE = 1,   /* the certificate file: unreadable or not a PEM chain */
    GATEHOUSE_TLS_SERVER_KEY = 2,           /* the key file: unreadable or not a PEM private key */
    GATEHOUSE_TLS_SERVER_MISMATCH = 3,      /* the key is not the certificate's */
    GATEHOUSE_TLS_SERVER_OTHER = 4,
};

/* A server context: TLS 1.2 and 1.3 only, Mozilla's "intermediate" TLS 1.2 ciphers (TLS 1.3's
 * suites are all modern), no renegotiation, no compression, no stateful session cache (resumption
 * by tickets only, under `ticket_material`: 160 bytes, two gatehouse_ticket_key), one TLS 1.3
 * ticket per handshake, ALPN http/1.1. The chain and key come from PEM (`cert_pem`/`key_pem`,
 * their lengths given). NULL with `*failure` and `reason` set when something does not fit. */
static inline SSL_CTX *gatehouse_tls_server_context(const char *cert_pem, long cert_length,
                                                    const char *key_pem, long key_length,
                                                    const unsigned char *ticket_material,
                                                    int *failure, char *reason, size_t reason_size) {
    *failure = GATEHOUSE_TLS_SERVER_OTHER;
    snprintf(reason, reason_size, "TLS: cannot create a server context");
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                          | SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                                 "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                                 "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
                                 "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305");
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 1);
    SSL_CTX_set_alpn_select_cb(ctx, gatehouse_tls_select_alpn, NULL);
    SSL_CTX_set_client_hello_cb(ctx, gatehouse_tls_client_hello, NULL);

    BIO *bio = BIO_new_mem_buf(cert_pem, (int)cert_length);
    X509 *leaf = bio ? PEM_read_bio_X509_AUX(bio, NULL, NULL, NULL) : NULL;
    int ok = leaf != NULL && SSL_CTX_use_certificate(ctx, leaf) == 1;
    X509_free(leaf);
    X509 *extra;
    while (ok && (extra = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) { X509_free(extra); ok = 0; }
    }
    BIO_free(bio);
    if (!ok) {
        *failure = GATEHOUSE_TLS_SERVER_CERTIFICATE;
        snprintf(reason, reason_size, "no PEM certificate could be read");
        SSL_CTX_free(ctx);
        ERR_clear_error();
        return NULL;
    }
    ERR_clear_error();
    bio = BIO_new_mem_buf(key_pem, (int)key_length);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (key == NULL) {
        *failure = GATEHOUSE_TLS_SERVER_KEY;
        snprintf(reason, reason_size, "no unencrypted PEM private key could be read");
        SSL_CTX_free(ctx);
        ERR_clear_error();
        return NULL;
    }
    ok = SSL_CTX_use_PrivateKey(ctx, key) == 1 && SSL_CTX_check_private_key(ctx) == 1;
    EVP_PKEY_free(key);
    if (!ok) {
        *failure = GATEHOUSE_TLS_SERVER_MISMATCH;
        snprintf(reason, reason_size, "the private key does not belong to the certificate");
        SSL_CTX_free(ctx);
        ERR_clear_error();
        return NULL;
    }
    gatehouse_ticket_keys *keys = OPENSSL_zalloc(sizeof *keys);
    if (keys == NULL) { SSL_CTX_free(ctx); return NULL; }
    memcpy(keys->keys, ticket_material, sizeof keys->keys);
    SSL_CTX_set_app_data(ctx, keys);
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, gatehouse_tls_ticket_key);
    *failure = 0;
    return ctx;
}

static inline void gatehouse_tls_server_context_free(SSL_CTX *ctx) {
    gatehouse_ticket_keys *keys = SSL_CTX_get_app_data(ctx);
    SSL_CTX_set_app_data(ctx, NULL);
    if (keys != NULL) {
        for (int i = 0; i < keys->challenge_count; i++) SSL_CTX_free(keys->challenges[i].ctx);
        OPENSSL_clear_free(keys, sizeof *keys);
    }
    SSL_CTX_free(ctx);
}

static const unsigned char gatehouse_acme_tls_1[] = { 10, 'a', 'c', 'm', 'e', '-', 't', 'l', 's', '/', '1' };

/* ALPN on a challenge context: acme-tls/1, nothing else (RFC 8737 §3). */
static inline int gatehouse_tls_select_acme_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                                 const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    unsigned char *chosen = NULL;
    if (SSL_select_next_proto(&chosen, outlen, gatehouse_acme_tls_1, sizeof gatehouse_acme_tls_1, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
        *out = chosen;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* Whether an ALPN extension (its raw bytes: a 2-byte list length, then length-prefixed names) offers
 * acme-tls/1. */
static inline int gatehouse_alpn_offers_acme(const unsigned char *ext, size_t length) {
    if (length < 2) return 0;
    size_t list = ((size_t)ext[0] << 8) | ext[1], i = 2;
    if (list + 2 != length) return 0;
    while (i < length) {
        size_t n = ext[i];
        if (i + 1 + n > length) return 0;
        if (n == 10 && memcmp(ext + i + 1, "acme-tls/1", 10) == 0) return 1;
        i += 1 + n;
    }
    return 0;
}

/* The host name of an SNI extension's raw bytes, copied into `out` (NUL-terminated); 0 if none. */
static inline int gatehouse_sni_name(const unsigned char *ext, size_t length, char *out, size_t size) {
    if (length < 5 || ext[2] != 0 /* host_name */) return 0;
    size_t n = ((size_t)ext[3] << 8) | ext[4];
    if (5 + n > length || n == 0 || n >= size) return 0;
    memcpy(out, ext + 5, n);
    out[n] = 0;
    for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)out[i]);
    return 1;
}

/* Before anything else of a ClientHello: a validator's tls-alpn-01 connection (ALPN acme-tls/1) is
 * given the challenge context for its name, or refused when no challenge is pending for it. */
static inline int gatehouse_tls_client_hello(SSL *ssl, int *alert, void *arg) {
    (void)arg;
    const unsigned char *ext = NULL;
    size_t length = 0;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &ext, &length) != 1
        || !gatehouse_alpn_offers_acme(ext, length)) {
        return SSL_CLIENT_HELLO_SUCCESS;
    }
    gatehouse_ticket_keys *keys = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    char name[256];
    if (keys != NULL && SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &ext, &length) == 1
        && gatehouse_sni_name(ext, length, name, sizeof name)) {
        for (int i = 0; i < keys->challenge_count; i++) {
            if (strcmp(keys->challenges[i].name, name) == 0) {
                SSL_set_SSL_CTX(ssl, keys->challenges[i].ctx);
                return SSL_CLIENT_HELLO_SUCCESS;
            }
        }
    }
    *alert = SSL_AD_NO_APPLICATION_PROTOCOL;
    return SSL_CLIENT_HELLO_ERROR;
}

/* Adds a challenge context for `name` to a server context not yet serving (it keeps a reference);
 * 0 when full. The context answers acme-tls/1 only. */
static inline int gatehouse_tls_server_add_challenge(SSL_CTX *ctx, const char *name, SSL_CTX *challenge) {
    gatehouse_ticket_keys *keys = SSL_CTX_get_app_data(ctx);
    if (keys == NULL || keys->challenge_count >= GATEHOUSE_TLS_ALPN_CHALLENGES || strlen(name) >= 256) return 0;
    if (SSL_CTX_up_ref(challenge) != 1) return 0;
    SSL_CTX_set_alpn_select_cb(challenge, gatehouse_tls_select_acme_alpn, NULL);
    gatehouse_alpn_challenge *slot = &keys->challenges[keys->challenge_count++];
    strcpy(slot->name, name);
    slot->ctx = challenge;
    return 1;
}

/* Whether the connection's handshake chose acme-tls/1 (a validator: closed once done). */
static inline int gatehouse_tls_is_acme_challenge(const SSL *ssl) {
    const unsigned char *proto = NULL;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl, &proto, &length);
    return length == 10 && memcmp(proto, "acme-tls/1", 10) == 0;
}

/* The certificate's notAfter in Unix seconds (0 when it cannot be read). */
static inline long long gatehouse_tls_server_not_after(SSL_CTX *ctx) {
    X509 *cert = SSL_CTX_get0_certificate(ctx);
    if (cert == NULL) return 0;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1) return 0;
    return (long long)timegm(&tm);
}

/* A server connection on the accepted non-blocking socket `fd`. */
static inline SSL *gatehouse_tls_server_new(SSL_CTX *ctx, int fd) {
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) return NULL;
    if (SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        return NULL;
    }
    SSL_set_accept_state(ssl);
    return ssl;
}

/* The negotiated protocol version ("TLSv1.3"), for tests and logs. */
static inline const char *gatehouse_tls_version(const SSL *ssl) { return SSL_get_version(ssl); }

/* ---- ACME (Gatehouse/TLS/ACME): its own blocking HTTPS exchanges and certificate requests. ---- */

/* One HTTP exchange over a new TLS connection to host:port, on the calling (background) thread:
 * the server verified against the PEM `bundle` (its name, or its IP address), `request` sent whole,
 * the answer read until the server closes (the request says `Connection: close`), at most 4 MiB.
 * Each socket operation waits at most `timeout_seconds`. Returns the answer's length with
 * `*response` malloc'ed (the caller frees it), or -1 with `reason` set. */
static inline long gatehouse_https_exchange(const char *host, const char *port, const char *bundle,
                                            const unsigned char *request, size_t request_length,
                                            int timeout_seconds, unsigned char **response,
                                            char *reason, size_t reason_size) {
    *response = NULL;
    SSL_CTX *ctx = gatehouse_tls_client_context(bundle);
    if (ctx == NULL) {
        snprintf(reason, reason_size, "the CA bundle %s cannot be read", bundle);
        return -1;
    }
    struct addrinfo hints, *found = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &found);
    if (rc != 0) {
        snprintf(reason, reason_size, "cannot resolve %s: %s", host, gai_strerror(rc));
        SSL_CTX_free(ctx);
        return -1;
    }
    int fd = -1;
    struct timeval limit = { timeout_seconds, 0 };
    for (struct addrinfo *a = found; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) { close(fd); fd = -1; }
    }
    freeaddrinfo(found);
    if (fd < 0) {
        snprintf(reason, reason_size, "cannot connect to %s:%s: %s", host, port, strerror(errno));
        SSL_CTX_free(ctx);
        return -1;
    }
    unsigned char probe[16];
    int is_ip = inet_pton(AF_INET, host, probe) == 1 || inet_pton(AF_INET6, host, probe) == 1;
    SSL *ssl = gatehouse_tls_client_new(ctx, fd, host, is_ip);
    long total = -1;
    if (ssl == NULL) {
        snprintf(reason, reason_size, "TLS: cannot set up a connection");
    } else if (SSL_connect(ssl) != 1) {
        gatehouse_tls_failure(ssl, reason, reason_size);
    } else {
        size_t sent = 0;
        while (sent < request_length) {
            int n = SSL_write(ssl, request + sent, (int)(request_length - sent));
            if (n <= 0) break;
            sent += (size_t)n;
        }
        size_t capacity = 16384, length = 0, cap = 4u << 20;
        unsigned char *buffer = malloc(capacity);
        while (sent == request_length && buffer != NULL) {
            if (length == capacity) {
                if (capacity >= cap) break;
                unsigned char *grown = realloc(buffer, capacity * 2);
                if (grown == NULL) break;
                buffer = grown;
                capacity *= 2;
            }
            int n = SSL_read(ssl, buffer + length, (int)(capacity - length));
            if (n <= 0) {
                int error = SSL_get_error(ssl, n);
                if (error == SSL_ERROR_ZERO_RETURN || error == SSL_ERROR_SYSCALL
                    || ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
                    total = (long)length;
                } else {
                    gatehouse_tls_failure(ssl, reason, reason_size);
                }
                break;
            }
            length += (size_t)n;
        }
        if (sent != request_length) snprintf(reason, reason_size, "the request could not be sent");
        if (total >= 0) { *response = buffer; } else { free(buffer); if (length >= cap) snprintf(reason, reason_size, "the answer is larger than 4 MiB"); }
    }
    if (ssl != NULL) gatehouse_tls_free(ssl, 1);
    close(fd);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return total;
}

/* A new P-256 key and a certificate request for `names` (`count` NUL-terminated DNS names): subject
 * CN the first name, every name in subjectAltName, signed with SHA-256. `*csr` (DER) and `*key`
 * (PKCS #8 PEM) are malloc'ed for the caller. 0 on success. */
static inline int gatehouse_acme_certificate_request(const char *const *names, int count,
                                                     unsigned char **csr, long *csr_length,
                                                     unsigned char **key, long *key_length) {
    *csr = NULL; *key = NULL;
    int ok = 0;
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509_REQ *req = X509_REQ_new();
    STACK_OF(X509_EXTENSION) *extensions = sk_X509_EXTENSION_new_null();
    size_t san_length = 1;
    for (int i = 0; i < count; i++) san_length += strlen(names[i]) + 5;
    char *san = calloc(1, san_length);
    if (pkey && req && extensions && san && count > 0) {
        for (int i = 0; i < count; i++) {
            if (i > 0) strcat(san, ",");
            strcat(san, "DNS:");
            strcat(san, names[i]);
        }
        X509_EXTENSION *alt = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
        ok = alt != NULL && sk_X509_EXTENSION_push(extensions, alt) > 0
            && X509_REQ_set_version(req, 0) == 1
            && X509_NAME_add_entry_by_txt(X509_REQ_get_subject_name(req), "CN", MBSTRING_ASC,
                                          (const unsigned char *)names[0], -1, -1, 0) == 1
            && X509_REQ_add_extensions(req, extensions) == 1
            && X509_REQ_set_pubkey(req, pkey) == 1
            && X509_REQ_sign(req, pkey, EVP_sha256()) > 0;
        if (!ok && alt != NULL && sk_X509_EXTENSION_num(extensions) == 0) X509_EXTENSION_free(alt);
    }
    if (ok) {
        int der_length = i2d_X509_REQ(req, NULL);
        BIO *bio = BIO_new(BIO_s_mem());
        char *pem = NULL;
        long pem_length = 0;
        ok = der_length > 0 && bio != NULL && PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL) == 1;
        if (ok) pem_length = BIO_get_mem_data(bio, &pem);
        *csr = ok ? malloc((size_t)der_length) : NULL;
        *key = ok ? malloc((size_t)pem_length) : NULL;
        if (*csr && *key) {
            unsigned char *cursor = *csr;
            i2d_X509_REQ(req, &cursor);
            memcpy(*key, pem, (size_t)pem_length);
            *csr_length = der_length;
            *key_length = pem_length;
        } else {
            free(*csr); free(*key); *csr = NULL; *key = NULL; ok = 0;
        }
        BIO_free(bio);
    }
    free(san);
    sk_X509_EXTENSION_pop_free(extensions, X509_EXTENSION_free);
    X509_REQ_free(req);
    EVP_PKEY_free(pkey);
    ERR_clear_error();
    return ok ? 0 : -1;
}

/* A self-signed P-256 certificate for `name`, valid for a day, and its key (both PEM, malloc'ed):
 * what the HTTPS listener presents while ACME has not delivered, so probes reach /readyz; with
 * `acme_digest` (32 bytes), a tls-alpn-01 challenge certificate. 0 on success. */
static inline int gatehouse_tls_self_signed(const char *name, const unsigned char *acme_digest,
                                            unsigned char **cert, long *cert_length,
                                            unsigned char **key, long *key_length) {
    *cert = NULL; *key = NULL;
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    BIO *cert_bio = BIO_new(BIO_s_mem()), *key_bio = BIO_new(BIO_s_mem());
    int extensions_ok = x != NULL;
    if (x != NULL && acme_digest != NULL) {
        /* RFC 8737 §3: subjectAltName the one name, and the critical id-pe-acmeIdentifier extension
         * holding the SHA-256 of the key authorization as a DER OCTET STRING. */
        char san[270];
        snprintf(san, sizeof san, "DNS:%s", name);
        X509_EXTENSION *alt = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
        unsigned char der[34] = { 0x04, 0x20 };
        memcpy(der + 2, acme_digest, 32);
        ASN1_OBJECT *oid = OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1);
        ASN1_OCTET_STRING *value = ASN1_OCTET_STRING_new();
        X509_EXTENSION *identifier = NULL;
        if (oid && value && ASN1_OCTET_STRING_set(value, der, sizeof der) == 1)
            identifier = X509_EXTENSION_create_by_OBJ(NULL, oid, 1, value);
        extensions_ok = alt && identifier && X509_add_ext(x, alt, -1) == 1 && X509_add_ext(x, identifier, -1) == 1;
        X509_EXTENSION_free(alt);
        X509_EXTENSION_free(identifier);
        ASN1_OCTET_STRING_free(value);
        ASN1_OBJECT_free(oid);
    }
    int ok = pkey && x && cert_bio && key_bio && extensions_ok
        && X509_set_version(x, 2) == 1
        && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) == 1
        && X509_gmtime_adj(X509_getm_notBefore(x), 0) != NULL
        && X509_gmtime_adj(X509_getm_notAfter(x), 86400) != NULL
        && X509_set_pubkey(x, pkey) == 1
        && X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC, (const unsigned char *)name, -1, -1, 0) == 1
        && X509_set_issuer_name(x, X509_get_subject_name(x)) == 1
        && X509_sign(x, pkey, EVP_sha256()) > 0
        && PEM_write_bio_X509(cert_bio, x) == 1
        && PEM_write_bio_PrivateKey(key_bio, pkey, NULL, NULL, 0, NULL, NULL) == 1;
    if (ok) {
        char *data = NULL;
        *cert_length = BIO_get_mem_data(cert_bio, &data);
        *cert = malloc((size_t)*cert_length);
        if (*cert) memcpy(*cert, data, (size_t)*cert_length);
        *key_length = BIO_get_mem_data(key_bio, &data);
        *key = malloc((size_t)*key_length);
        if (*key) memcpy(*key, data, (size_t)*key_length);
        ok = *cert != NULL && *key != NULL;
        if (!ok) { free(*cert); free(*key); *cert = NULL; *key = NULL; }
    }
    BIO_free(cert_bio);
    BIO_free(key_bio);
    X509_free(x);
    EVP_PKEY_free(pkey);
    ERR_clear_error();
    return ok ? 0 : -1;
}

#endif
