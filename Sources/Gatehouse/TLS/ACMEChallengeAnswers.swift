import Synchronization

/// http-01 answers (RFC 8555 §8.3): a challenge's key authorization is its token, a dot, and the
/// account key's thumbprint, so an instance that knows the account's thumbprint answers every
/// token of its account, whichever instance ordered (acme.sh's "stateless" mode). Behind a
/// balancer the CA's request may reach any instance; each knows the thumbprint from the shared
/// store (`ACMECertificates` sets it, `lookUp` reads it on a miss).
///
/// Answering a token this account did not request gives nothing away: the CA compares the answer
/// with the key authorization of the account that requested it, which for another account has
/// another thumbprint.
final class ACMEChallengeAnswers: Sendable {
    private let knownThumbprint = Mutex<String?>(nil)
    /// Reads the account's thumbprint from the store (nil: no account yet); set with ACME.
    private let lookUp: (@Sendable () async -> String?)?

    init(lookUp: (@Sendable () async -> String?)? = nil) {
        self.lookUp = lookUp
    }

    var thumbprint: String? {
        get { knownThumbprint.withLock { $0 } }
        set { knownThumbprint.withLock { $0 = newValue } }
    }

    /// Whether `lookUp` can still learn a thumbprint not known yet.
    var canLookUp: Bool { lookUp != nil }

    /// The key authorization for `token`, from the known thumbprint.
    func keyAuthorization(for token: Substring) -> String? {
        guard Self.isToken(token), let thumbprint else { return nil }
        return token + "." + thumbprint
    }

    /// As `keyAuthorization(for:)`, asking the store when the thumbprint is not known yet.
    func lookedUpKeyAuthorization(for token: Substring) async -> String? {
        if let known = keyAuthorization(for: token) { return known }
        guard Self.isToken(token), let lookUp, let found = await lookUp() else { return nil }
        thumbprint = found
        return token + "." + found
    }

    /// A token is base64url, at least 22 characters (128 bits, §8.1), at most 256.
    static func isToken(_ token: Substring) -> Bool {
        (22...256).contains(token.utf8.count) && token.utf8.allSatisfy(ACMEClient.isTokenByte)
    }
}
