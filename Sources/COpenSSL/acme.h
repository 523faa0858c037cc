#ifndef GATEHOUSE_COPENSSL_ACME_H
#define GATEHOUSE_COPENSSL_ACME_H

/* Included by shim.h (after the server side: the placeholder and challenge certificates). */

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
