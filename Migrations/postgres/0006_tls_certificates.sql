-- 0006_tls_certificates: the HTTPS listener's ACME state (SPEC "Facing the browser directly"),
-- shared by every instance on this store: per ACME directory and set of names, the account key,
-- the certificate and its key (sealed with the secret key, like tokens), and the lease the one
-- instance ordering holds meanwhile. Additive.
CREATE TABLE tls_certificates (
    name        TEXT    PRIMARY KEY,
    sealed      BYTEA   NOT NULL,
    not_after   BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT
);
