import Foundation
import HTTP1

/// One response as it arrived on the wire.
public struct RawResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders, body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object (nil when it is not one).
    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    public var location: String? { headers["Location"] }

    /// Every `Set-Cookie` value whose cookie is called `name`.
    public func setCookies(named name: String) -> [String] {
        headers.values("Set-Cookie").filter { $0.hasPrefix(name + "=") }
    }
}
