import Synchronization
import TestSupport

/// A browser's cookies for the gateway's origin, kept by hand so tests see every `Set-Cookie`.
/// Attributes are ignored except `Max-Age=0` (deletion); all test servers share 127.0.0.1.
final class CookieJar: Sendable {
    private let cookies = Mutex<[(name: String, value: String)]>([])

    func update(from response: RawResponse) {
        for header in response.headers.values("Set-Cookie") {
            let parts = header.split(separator: ";", omittingEmptySubsequences: false)
            guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { continue }
            let name = String(pair[..<equals]).strippingSpaces()
            let value = String(pair[pair.index(after: equals)...]).strippingSpaces()
            let deleted = parts.dropFirst().contains { $0.strippingSpaces().lowercased() == "max-age=0" }
            cookies.withLock { jar in
                jar.removeAll { $0.name == name }
                if !deleted { jar.append((name, value)) }
            }
        }
    }

    subscript(name: String) -> String? {
        get { cookies.withLock { jar in jar.first { $0.name == name }?.value } }
        set {
            cookies.withLock { jar in
                jar.removeAll { $0.name == name }
                if let newValue { jar.append((name, newValue)) }
            }
        }
    }

    /// The `Cookie` request header, nil when the jar is empty.
    var header: String? {
        cookies.withLock { jar in jar.isEmpty ? nil : jar.map { "\($0.name)=\($0.value)" }.joined(separator: "; ") }
    }
}

extension StringProtocol {
    fileprivate func strippingSpaces() -> String {
        var text = Substring(self)
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return String(text)
    }
}
