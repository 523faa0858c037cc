/// The HTTPS listener's ACME state in the session store (`tls_certificates`): one record per ACME
/// directory and set of names, its payload sealed with the secret key (associated data: the
/// record's name), and a lease so that one instance orders at a time while the others wait for
/// what it stores.
public protocol CertificateRecordStore: Sendable {
    /// The stored record, opened; nil when none was stored yet.
    func loadCertificateRecord(name: String) throws(SessionStoreError) -> CertificateRecord?
    /// Stores `record` if `owner` holds the record's lease; returns whether it did.
    func saveCertificateRecord(_ record: CertificateRecord, owner: String) throws(SessionStoreError) -> Bool
    /// Takes (or extends) the lease on `name` for `duration` seconds; false while another owner
    /// holds it.
    func acquireCertificateLease(name: String, owner: String, now: Int64, duration: Int64) throws(SessionStoreError) -> Bool
    func releaseCertificateLease(name: String, owner: String) throws(SessionStoreError)
}

/// One record of ACME state: what the payload holds is the ACME client's (`ACMEState`).
public struct CertificateRecord: Sendable, Equatable {
    public var name: String
    public var payload: [UInt8]
    /// The certificate's expiry (Unix seconds), 0 before one was issued.
    public var notAfter: Int64
    public var updatedAt: Int64

    public init(name: String, payload: [UInt8], notAfter: Int64, updatedAt: Int64) {
        self.name = name
        self.payload = payload
        self.notAfter = notAfter
        self.updatedAt = updatedAt
    }
}

extension SessionStatement {
    /// Inserts the row (empty, leased) or takes the lease of an existing one when it is free,
    /// expired or already ours: one statement, so two instances cannot both win.
    static let acquireCertificateLease = SessionStatement("""
        INSERT INTO tls_certificates (name, sealed, not_after, updated_at, lease_owner, lease_until)
        VALUES (?1, ?5, 0, ?4, ?2, ?3)
        ON CONFLICT (name) DO UPDATE SET lease_owner = ?2, lease_until = ?3
        WHERE tls_certificates.lease_owner IS NULL OR tls_certificates.lease_owner = ?2
           OR tls_certificates.lease_until IS NULL OR tls_certificates.lease_until <= ?4
        """)
    static let releaseCertificateLease = SessionStatement("""
        UPDATE tls_certificates SET lease_owner = NULL, lease_until = NULL WHERE name = ?1 AND lease_owner = ?2
        """)
    static let saveCertificateRecord = SessionStatement("""
        UPDATE tls_certificates SET sealed = ?2, not_after = ?3, updated_at = ?4 WHERE name = ?1 AND lease_owner = ?5
        """)
    static let selectCertificateRecord = SessionStatement("""
        SELECT sealed, not_after, updated_at FROM tls_certificates WHERE name = ?1
        """)
}

extension SealedSessionStore: CertificateRecordStore {
    public func loadCertificateRecord(name: String) throws(SessionStoreError) -> CertificateRecord? {
        let row = try observedRead { (tx: Connection) throws(Failure) -> (sealed: [UInt8], notAfter: Int64, updatedAt: Int64)? in
            try tx.queryFirst(.selectCertificateRecord, [.text(name)]) { (row: Connection.Row) throws(Failure) in
                (try row.requiredBytes(0), row.int64(1), row.int64(2))
            }
        }
        guard let row, !row.sealed.isEmpty else { return nil }
        do {
            let payload = try sealer.open(row.sealed, associatedData: Self.associatedData(name))
            return CertificateRecord(name: name, payload: payload, notAfter: row.notAfter, updatedAt: row.updatedAt)
        } catch {
            throw .sealing(error)
        }
    }

    public func saveCertificateRecord(_ record: CertificateRecord, owner: String) throws(SessionStoreError) -> Bool {
        let sealed: [UInt8]
        do { sealed = try sealer.seal(record.payload, associatedData: Self.associatedData(record.name)) } catch {
            throw .sealing(error)
        }
        return try observedWrite { (tx: Connection) throws(Failure) -> Bool in
            try tx.run(.saveCertificateRecord, [.text(record.name), .bytes(sealed), .integer(record.notAfter),
                                                .integer(record.updatedAt), .text(owner)]) == 1
        }
    }

    public func acquireCertificateLease(name: String, owner: String, now: Int64, duration: Int64) throws(SessionStoreError) -> Bool {
        let until = saturatingAdd(now, max(0, duration))
        return try observedWrite { (tx: Connection) throws(Failure) -> Bool in
            try tx.run(.acquireCertificateLease, [.text(name), .text(owner), .integer(until), .integer(now), .bytes([])]) == 1
        }
    }

    public func releaseCertificateLease(name: String, owner: String) throws(SessionStoreError) {
        try observedWrite { (tx: Connection) throws(Failure) in
            try tx.run(.releaseCertificateLease, [.text(name), .text(owner)])
        }
    }

    private static func associatedData(_ name: String) -> [UInt8] { Array(("tls_certificates:" + name).utf8) }
}
