#ifndef GATEHOUSE_CCURL_SHIM_H
#define GATEHOUSE_CCURL_SHIM_H

#include <curl/curl.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

/* Swift cannot call C variadic functions, so each curl_easy_setopt / curl_multi_setopt use gets a
 * typed, non-variadic wrapper. Macros Swift does not import as the type libcurl expects (the
 * callbacks' size_t return codes, CURLPAUSE_* expressions) are exposed as functions too. */

static inline CURLcode gatehouse_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode gatehouse_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode gatehouse_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode gatehouse_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode gatehouse_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/* Write and header callbacks share this signature. */
static inline CURLcode gatehouse_curl_easy_setopt_write_callback(CURL *handle, CURLoption option,
                                                                 curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

static inline CURLcode gatehouse_curl_easy_setopt_read_callback(CURL *handle, curl_read_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, callback);
}

/* CURLOPT_PREREQFUNCTION (libcurl 7.80): called right before each attempt sends the request. */
static inline CURLcode gatehouse_curl_easy_setopt_prereq_callback(CURL *handle, curl_prereq_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}

static inline CURLMcode gatehouse_curl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

/* CURLINFO_ACTIVESOCKET: the socket of a CURLOPT_CONNECT_ONLY connection (wss:// tunnels). */
static inline CURLcode gatehouse_curl_easy_getinfo_socket(CURL *handle, curl_socket_t *socket) {
    return curl_easy_getinfo(handle, CURLINFO_ACTIVESOCKET, socket);
}

/* libcurl's built-in CA bundle (Debian: /etc/ssl/certs/ca-certificates.crt), or NULL. */
static inline const char *gatehouse_curl_default_ca_file(void) {
    return curl_version_info(CURLVERSION_NOW)->cainfo;
}

/* A certificate store read once from `file` (PEM bundle), for gatehouse_curl_easy_share_store. */
static inline X509_STORE *gatehouse_x509_store_load(const char *file) {
    X509_STORE *store = X509_STORE_new();
    if (store == NULL) return NULL;
    if (X509_STORE_load_file(store, file) != 1) {
        X509_STORE_free(store);
        return NULL;
    }
    return store;
}

static inline void gatehouse_x509_store_free(X509_STORE *store) { X509_STORE_free(store); }

/* CURLOPT_SSL_CTX_FUNCTION: the connection's SSL_CTX verifies against the shared store (one more
 * reference; the context frees its own). Without the store the context stays empty and the
 * handshake fails: a missing store never means an unchecked certificate. */
static inline CURLcode gatehouse_curl_ssl_ctx_use_store(CURL *curl, void *ssl_ctx, void *store) {
    (void)curl;
    if (store == NULL || X509_STORE_up_ref((X509_STORE *)store) != 1) return CURLE_SSL_CACERT_BADFILE;
    SSL_CTX_set_cert_store((SSL_CTX *)ssl_ctx, (X509_STORE *)store);
    return CURLE_OK;
}

/* The handle verifies against `store` instead of reading a CA file for its connection. */
static inline CURLcode gatehouse_curl_easy_share_store(CURL *handle, X509_STORE *store) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_CAINFO, (const char *)NULL);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CAPATH, (const char *)NULL);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_SSL_CTX_FUNCTION, gatehouse_curl_ssl_ctx_use_store);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_SSL_CTX_DATA, (void *)store);
    return code;
}

static inline size_t gatehouse_curl_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }
static inline size_t gatehouse_curl_readfunc_abort(void) { return CURL_READFUNC_ABORT; }
static inline size_t gatehouse_curl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline int gatehouse_curl_pause_recv(void) { return CURLPAUSE_RECV; }
static inline int gatehouse_curl_pause_send(void) { return CURLPAUSE_SEND; }
static inline int gatehouse_curl_prereqfunc_ok(void) { return CURL_PREREQFUNC_OK; }
static inline int gatehouse_curl_prereqfunc_abort(void) { return CURL_PREREQFUNC_ABORT; }
static inline long gatehouse_curl_global_default(void) { return CURL_GLOBAL_DEFAULT; }

#endif
