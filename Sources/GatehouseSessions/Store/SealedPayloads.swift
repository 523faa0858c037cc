import Foundation

/// The secret part of a session row, sealed as JSON with associated data = the id hash.
struct SessionSecrets: Codable {
    var tokens: TokenSet
    /// Raw ID token claims JSON; base64 inside the sealed JSON.
    var claims: Data

    static func sealed(tokens: TokenSet, claims: [UInt8], idHash: String,
                       sealer: TokenSealer) throws(SessionStoreError) -> [UInt8] {
        let json: Data
        do {
            json = try JSONEncoder().encode(SessionSecrets(tokens: tokens, claims: Data(claims)))
        } catch {
            throw .encoding("cannot encode session tokens")
        }
        do {
            return try sealer.seal(Array(json), associatedData: Array(idHash.utf8))
        } catch {
            throw .sealing(error)
        }
    }

    static func opened(_ sealed: [UInt8], idHash: String, sealer: TokenSealer) throws(SessionStoreError) -> SessionSecrets {
        let json: [UInt8]
        do {
            json = try sealer.open(sealed, associatedData: Array(idHash.utf8))
        } catch {
            throw .sealing(error)
        }
        do {
            return try JSONDecoder().decode(SessionSecrets.self, from: Data(json))
        } catch {
            throw .encoding("cannot decode stored session tokens")
        }
    }
}

/// The secret part of a pending login, sealed as JSON with associated data = the state hash.
struct PendingLoginSecrets: Codable {
    var codeVerifier: String
    var nonce: String
    var returnTo: String

    static func sealed(_ login: PendingLogin, sealer: TokenSealer) throws(SessionStoreError) -> [UInt8] {
        let json: Data
        do {
            json = try JSONEncoder().encode(PendingLoginSecrets(codeVerifier: login.codeVerifier,
                                                                nonce: login.nonce, returnTo: login.returnTo))
        } catch {
            throw .encoding("cannot encode pending login")
        }
        do {
            return try sealer.seal(Array(json), associatedData: Array(login.stateHash.utf8))
        } catch {
            throw .sealing(error)
        }
    }

    static func opened(_ sealed: [UInt8], stateHash: String, sealer: TokenSealer) throws(SessionStoreError) -> PendingLoginSecrets {
        let json: [UInt8]
        do {
            json = try sealer.open(sealed, associatedData: Array(stateHash.utf8))
        } catch {
            throw .sealing(error)
        }
        do {
            return try JSONDecoder().decode(PendingLoginSecrets.self, from: Data(json))
        } catch {
            throw .encoding("cannot decode stored pending login")
        }
    }
}
