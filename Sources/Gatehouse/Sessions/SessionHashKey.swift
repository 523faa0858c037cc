import HTTP1

/// A session's id hash as the key of the session cache.
///
/// The id hash is the hex SHA-256 of a random id, computed by the gateway (a client chooses the
/// cookie, never the hash): its first 16 characters are as good as random and are all that is
/// hashed. Hashing the whole 64-character `String` with SipHash cost about 450 instructions per
/// proxied request; two words cost a tenth of that. Keys are equal when their bytes are (so that
/// equal keys always hash alike: `String`'s own `==` compares canonical equivalence).
struct SessionHashKey: Hashable, Sendable {
    let idHash: String

    init(_ idHash: String) {
        self.idHash = idHash
    }

    static func == (a: SessionHashKey, b: SessionHashKey) -> Bool {
        let equal: Bool? = a.idHash.utf8.withContiguousStorageIfAvailable { x in
            b.idHash.utf8.withContiguousStorageIfAvailable { y in
                ByteSearch.equal(x, y)
            }
        } ?? nil
        if let equal { return equal }
        return Array(a.idHash.utf8) == Array(b.idHash.utf8)
    }

    /// The first 16 hex digits folded into 64 bits (they carry four random bits a byte), or nil
    /// for an id of another form (shorter, or not a native string).
    private var prefix: UInt64? {
        idHash.utf8.withContiguousStorageIfAvailable { bytes -> UInt64? in
            guard bytes.count >= 16, let base = bytes.baseAddress else { return nil }
            let raw = UnsafeRawPointer(base)
            return raw.loadUnaligned(as: UInt64.self) &* 0x9E37_79B9_7F4A_7C15 ^ raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        } ?? nil
    }

    /// The prefix as it is (with the table's seed): uniformly random already, so `Dictionary` needs
    /// no hashing of it (a seeded hash's set-up and finalisation were about 250 instructions of each
    /// look-up). Ids of another form are hashed in full.
    func _rawHashValue(seed: Int) -> Int {
        guard let prefix else {
            var hasher = Hasher(); hash(into: &hasher)
            return hasher.finalize() ^ seed
        }
        return Int(truncatingIfNeeded: prefix ^ (prefix >> 32)) ^ seed
    }

    func hash(into hasher: inout Hasher) {
        if let prefix { return hasher.combine(prefix) }
        for byte in idHash.utf8 { hasher.combine(byte) }
    }
}
