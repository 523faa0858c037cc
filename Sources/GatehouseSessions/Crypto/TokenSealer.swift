import Crypto
import FoundationEssentials
import GatehouseEncoding

/// Encrypts tokens and other secrets at rest with AES-256-GCM under `GATEHOUSE_SECRET_KEY`, and
/// still opens data written under `GATEHOUSE_SECRET_KEY_PREVIOUS` during a key rotation.
///
/// Sealed layout: `format (1 byte, 0x01) ‖ key id (4 bytes) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`.
/// The key id is the first 4 bytes of SHA-256("gatehouse-sealer-key-id" ‖ key), so `open` picks
/// the right key without trial decryption. The header and the caller's associated data are both
/// authenticated: sessions pass their id hash, pending logins their state hash, so a blob copied
/// into another row does not open.
///
/// For example:
/// ```swift
/// let sealer = try TokenSealer(current: key, previous: nil)
/// let box = try sealer.seal(Array(json), associatedData: Array(idHash.utf8))
/// let json = try sealer.open(box, associatedData: Array(idHash.utf8))
/// ```
public struct TokenSealer: Sendable {
    static let formatVersion: UInt8 = 1
    static let keyIDLength = 4
    static let nonceLength = 12
    static let tagLength = 16
    static let headerLength = 1 + keyIDLength
    /// The shortest possible sealed value: header, nonce and tag around an empty plaintext.
    static let minimumLength = headerLength + nonceLength + tagLength

    private struct Keyed: Sendable {
        let key: SymmetricKey
        let id: [UInt8]
    }

    private let current: Keyed
    private let previous: Keyed?

    /// - Parameters:
    ///   - current: 32 bytes; seals everything new and opens what it sealed.
    ///   - previous: 32 bytes or nil; only opens data sealed before a rotation.
    /// - Throws: `SealError.invalidKeyLength` when a key is not 32 bytes.
    public init(current: [UInt8], previous: [UInt8]? = nil) throws(SealError) {
        guard current.count == 32 else { throw .invalidKeyLength(role: "current", count: current.count) }
        self.current = Self.keyed(current)
        if let previous {
            guard previous.count == 32 else { throw .invalidKeyLength(role: "previous", count: previous.count) }
            self.previous = Self.keyed(previous)
        } else {
            self.previous = nil
        }
    }

    private static func keyed(_ bytes: [UInt8]) -> Keyed {
        var hasher = SHA256()
        hasher.update(data: Array("gatehouse-sealer-key-id".utf8))
        hasher.update(data: bytes)
        return Keyed(key: SymmetricKey(data: bytes), id: Array(hasher.finalize().prefix(keyIDLength)))
    }

    /// Encrypts `plaintext` under the current key with a fresh random nonce.
    /// - Parameter associatedData: bound to the result; `open` must be given the same bytes.
    /// - Throws: `SealError.sealFailed` if AES-GCM fails (not expected).
    public func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws(SealError) -> [UInt8] {
        let header = [Self.formatVersion] + current.id
        do {
            // 96 random bits in one getrandom call (`AES.GCM.Nonce()` draws them 8 bytes at a time).
            let nonce = try AES.GCM.Nonce(data: RandomBytes.system(12))
            let box = try AES.GCM.seal(plaintext, using: current.key, nonce: nonce,
                                       authenticating: header + associatedData)
            return header + Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw .sealFailed
        }
    }

    /// Decrypts a value produced by `seal` under the current or the previous key.
    /// - Throws: `SealError.malformed` (bad length or format), `.unknownKey` (neither key),
    ///   `.authenticationFailed` (tampered, or different associated data).
    public func open(_ sealed: [UInt8], associatedData: [UInt8]) throws(SealError) -> [UInt8] {
        guard sealed.count >= Self.minimumLength, sealed[0] == Self.formatVersion else { throw .malformed }
        let keyID = Array(sealed[1..<Self.headerLength])
        let keyed: Keyed
        if keyID == current.id {
            keyed = current
        } else if let previous, keyID == previous.id {
            keyed = previous
        } else {
            throw .unknownKey
        }
        let nonceEnd = Self.headerLength + Self.nonceLength
        let tagStart = sealed.count - Self.tagLength
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: sealed[Self.headerLength..<nonceEnd]),
                                            ciphertext: sealed[nonceEnd..<tagStart],
                                            tag: sealed[tagStart...])
            let plaintext = try AES.GCM.open(box, using: keyed.key,
                                             authenticating: Array(sealed[0..<Self.headerLength]) + associatedData)
            return Array(plaintext)
        } catch {
            throw .authenticationFailed
        }
    }
}
