import FoundationEssentials

/// The secret part of a stored row: JSON sealed with AES-GCM, bound by associated data to the row's
/// key (the session id hash, the state hash), so a sealed value copied into another row does not open.
protocol SealedRowPayload: Codable {
    /// Names the payload in errors (`cannot decode stored session tokens`).
    static var payloadName: String { get }
}

extension SealedRowPayload {
    func sealed(boundTo key: String, sealer: TokenSealer) throws(SessionStoreError) -> [UInt8] {
        let json: Data
        do {
            json = try JSONEncoder().encode(self)
        } catch {
            throw .encoding("cannot encode \(Self.payloadName)")
        }
        do {
            return try sealer.seal(Array(json), associatedData: Array(key.utf8))
        } catch {
            throw .sealing(error)
        }
    }

    static func opened(_ sealed: [UInt8], boundTo key: String, sealer: TokenSealer) throws(SessionStoreError) -> Self {
        let json: [UInt8]
        do {
            json = try sealer.open(sealed, associatedData: Array(key.utf8))
        } catch {
            throw .sealing(error)
        }
        do {
            return try JSONDecoder().decode(Self.self, from: Data(json))
        } catch {
            throw .encoding("cannot decode stored \(Self.payloadName)")
        }
    }
}

/// The secret part of a session row, sealed with associated data = the id hash.
struct SessionSecrets: SealedRowPayload {
    static let payloadName = "session tokens"

    var tokens: TokenSet
    /// Raw ID token claims JSON; base64 inside the sealed JSON.
    var claims: Data

    static func sealed(tokens: TokenSet, claims: [UInt8], idHash: String,
                       sealer: TokenSealer) throws(SessionStoreError) -> [UInt8] {
        try SessionSecrets(tokens: tokens, claims: Data(claims)).sealed(boundTo: idHash, sealer: sealer)
    }

    static func opened(_ sealed: [UInt8], idHash: String, sealer: TokenSealer) throws(SessionStoreError) -> SessionSecrets {
        try opened(sealed, boundTo: idHash, sealer: sealer)
    }
}

/// The secret part of a pending login, sealed with associated data = the state hash.
struct PendingLoginSecrets: SealedRowPayload {
    static let payloadName = "pending login"

    var codeVerifier: String
    var nonce: String
    var returnTo: String
    /// Absent in logins stored before several providers (they are `default`'s).
    var provider: String?
    var requiredClaims: [String: String]?
    /// Step-up (absent in logins that asked for none).
    var acrValues: [String]?
    var maxAge: Int?
    /// Absent unless the login's request object is passed by reference.
    var requestObject: String?

    static func sealed(_ login: PendingLogin, sealer: TokenSealer) throws(SessionStoreError) -> [UInt8] {
        try PendingLoginSecrets(codeVerifier: login.codeVerifier, nonce: login.nonce, returnTo: login.returnTo,
                                provider: login.provider,
                                requiredClaims: login.requiredClaims.isEmpty ? nil : login.requiredClaims,
                                acrValues: login.acrValues.isEmpty ? nil : login.acrValues, maxAge: login.maxAge,
                                requestObject: login.requestObject)
            .sealed(boundTo: login.stateHash, sealer: sealer)
    }

    static func opened(_ sealed: [UInt8], stateHash: String, sealer: TokenSealer) throws(SessionStoreError) -> PendingLoginSecrets {
        try opened(sealed, boundTo: stateHash, sealer: sealer)
    }
}
