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

/* The HTTPS listener's contexts, and ACME's own exchanges and certificates. */
#include "tls_server.h"
#include "acme.h"

#endif
