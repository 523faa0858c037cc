import Synchronization

/// The http-01 challenges being validated (RFC 8555 §8.3): token to key authorization, set by the
/// ACME order for the time of its validation and read by the redirect listener.
final class ACMEChallengeAnswers: Sendable {
    private let answers = Mutex<[String: String]>([:])

    func keyAuthorization(for token: Substring) -> String? {
        answers.withLock { $0[String(token)] }
    }

    func publish(token: String, keyAuthorization: String) {
        answers.withLock { $0[token] = keyAuthorization }
    }

    func withdraw(token: String) {
        _ = answers.withLock { $0.removeValue(forKey: token) }
    }
}
