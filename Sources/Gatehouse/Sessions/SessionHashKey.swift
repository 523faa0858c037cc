#if canImport(Glibc)
import Glibc
#endif

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
                x.count == y.count && (x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0)
            }
        } ?? nil
        if let equal { return equal }
        return Array(a.idHash.utf8) == Array(b.idHash.utf8)
    }

    /// The first eight bytes as they are (with the table's seed): uniformly random already, so
    /// `Dictionary` needs no hashing of them (a seeded hash's set-up and finalisation were about
    /// 250 instructions of each look-up). Ids of another form are hashed in full.
    func _rawHashValue(seed: Int) -> Int {
        let prefix: UInt64? = idHash.utf8.withContiguousStorageIfAvailable { bytes in
            guard bytes.count >= 16, let base = bytes.baseAddress else { return nil }
            let raw = UnsafeRawPointer(base)
            // Hex digits carry four bits a byte: fold the first sixteen into 64 bits.
            return raw.loadUnaligned(as: UInt64.self) &* 0x9E37_79B9_7F4A_7C15
                ^ raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        } ?? nil
        guard let prefix else {
            var hasher = Hasher()
            hash(into: &hasher)
            return hasher.finalize() ^ seed
        }
        return Int(truncatingIfNeeded: prefix ^ (prefix >> 32)) ^ seed
    }

    func hash(into hasher: inout Hasher) {
        let hashed: Bool? = idHash.utf8.withContiguousStorageIfAvailable { bytes in
            guard bytes.count >= 16, let base = bytes.baseAddress else { return false }
            let raw = UnsafeRawPointer(base)
            hasher.combine(raw.loadUnaligned(as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            return true
        }
        if hashed == true { return }
        for byte in idHash.utf8 { hasher.combine(byte) }
    }
}
