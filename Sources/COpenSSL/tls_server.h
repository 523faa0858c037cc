#ifndef GATEHOUSE_COPENSSL_TLS_SERVER_H
#define GATEHOUSE_COPENSSL_TLS_SERVER_H

/* Included by shim.h (after the client side and the shared record calls it uses). */

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

/* A refused certificate or key: `failure` and `reason` say which, the context is freed, OpenSSL's
 * error queue cleared (another connection's error must not report this one). */
static inline SSL_CTX *gatehouse_tls_server_refuse(SSL_CTX *ctx, int *failure, int code, char *reason,
                                                   size_t reason_size, const char *why) {
    *failure = code;
    snprintf(reason, reason_size, "%s", why);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

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
        return gatehouse_tls_server_refuse(ctx, failure, GATEHOUSE_TLS_SERVER_CERTIFICATE, reason, reason_size,
                                           "no PEM certificate could be read");
    }
    ERR_clear_error();
    bio = BIO_new_mem_buf(key_pem, (int)key_length);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (key == NULL) {
        return gatehouse_tls_server_refuse(ctx, failure, GATEHOUSE_TLS_SERVER_KEY, reason, reason_size,
                                           "no unencrypted PEM private key could be read");
    }
    ok = SSL_CTX_use_PrivateKey(ctx, key) == 1 && SSL_CTX_check_private_key(ctx) == 1;
    EVP_PKEY_free(key);
    if (!ok) {
        return gatehouse_tls_server_refuse(ctx, failure, GATEHOUSE_TLS_SERVER_MISMATCH, reason, reason_size,
                                           "the private key does not belong to the certificate");
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

#endif
