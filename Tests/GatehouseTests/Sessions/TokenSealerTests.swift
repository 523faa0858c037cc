import GatehouseSessions
import Testing

@Suite("TokenSealer (AES-256-GCM at rest, key rotation)")
struct TokenSealerTests {
    let plaintext = Array(#"{"accessToken":"secret-access"}"#.utf8)
    let ad = Array("a3f1c2".utf8)

    @Test("Round trip: what is sealed opens with the same associated data")
    func roundTrip() throws {
        let sealer = try testSealer(1)
        let sealed = try sealer.seal(plaintext, associatedData: ad)
        #expect(try sealer.open(sealed, associatedData: ad) == plaintext)
        #expect(!bytes(sealed, contain: "secret-access"))
    }

    @Test("Empty plaintext round-trips")
    func emptyPlaintext() throws {
        let sealer = try testSealer(1)
        #expect(try sealer.open(try sealer.seal([], associatedData: ad), associatedData: ad) == [])
    }

    @Test("Sealing twice gives different bytes (fresh nonce)")
    func freshNonce() throws {
        let sealer = try testSealer(1)
        #expect(try sealer.seal(plaintext, associatedData: ad) != (try sealer.seal(plaintext, associatedData: ad)))
    }

    @Test("Different associated data (a blob moved to another row) fails authentication")
    func wrongAssociatedData() throws {
        let sealer = try testSealer(1)
        let sealed = try sealer.seal(plaintext, associatedData: ad)
        #expect(throws: SealError.authenticationFailed) {
            try sealer.open(sealed, associatedData: Array("other-row".utf8))
        }
    }

    @Test("Flipping any single byte is detected", arguments: [0, 1, 5, 10, 17, 30, -1])
    func tampering(position: Int) throws {
        let sealer = try testSealer(1)
        var sealed = try sealer.seal(plaintext, associatedData: ad)
        let index = position >= 0 ? position : sealed.count + position
        sealed[index] ^= 0x01
        #expect(throws: SealError.self) { try sealer.open(sealed, associatedData: ad) }
    }

    @Test("Truncated or empty input is malformed, never a crash", arguments: [0, 1, 5, 20, 32])
    func truncated(length: Int) throws {
        let sealer = try testSealer(1)
        let sealed = try sealer.seal(plaintext, associatedData: ad)
        #expect(throws: SealError.malformed) { try sealer.open(Array(sealed.prefix(length)), associatedData: ad) }
    }

    @Test("After rotation the previous key still opens old data, and new data uses the current key")
    func previousKeyStillOpens() throws {
        let old = try testSealer(1)
        let rotated = try testSealer(2, previous: 1)
        let sealedOld = try old.seal(plaintext, associatedData: ad)
        #expect(try rotated.open(sealedOld, associatedData: ad) == plaintext)
        let sealedNew = try rotated.seal(plaintext, associatedData: ad)
        #expect(throws: SealError.unknownKey) { try old.open(sealedNew, associatedData: ad) }
        #expect(try testSealer(2).open(sealedNew, associatedData: ad) == plaintext)
    }

    @Test("Data sealed under a key that is neither current nor previous is refused as unknownKey")
    func unknownKey() throws {
        let sealed = try testSealer(1).seal(plaintext, associatedData: ad)
        #expect(throws: SealError.unknownKey) { try testSealer(3, previous: 4).open(sealed, associatedData: ad) }
    }

    @Test("Keys must be 32 bytes", arguments: [0, 16, 31, 33, 64])
    func keyLength(count: Int) {
        #expect(throws: SealError.invalidKeyLength(role: "current", count: count)) {
            try TokenSealer(current: [UInt8](repeating: 1, count: count))
        }
        #expect(throws: SealError.invalidKeyLength(role: "previous", count: count)) {
            try TokenSealer(current: testKey(1), previous: [UInt8](repeating: 1, count: count))
        }
    }
}
