import Testing
@testable import Gatehouse
import HTTP1

/// The pure checks of a proxied WebSocket handshake (RFC 6455 §4) and the frame-boundary tracker.
@Suite struct WebSocketHandshakeTests {
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    static let origin = "https://app.example.com"

    func handshake(_ extra: [(String, String)] = [], dropping: Set<String> = []) -> HTTPHeaders {
        var fields: [(String, String)] = [("Host", "app.example.com"), ("Upgrade", "websocket"),
                                          ("Connection", "keep-alive, Upgrade"), ("Sec-WebSocket-Key", Self.key),
                                          ("Sec-WebSocket-Version", "13"), ("Origin", Self.origin)]
        fields.removeAll { dropping.contains($0.0) }
        return HTTPHeaders(fields + extra)
    }

    @Test func acceptValueOfTheRFCExample() {
        // RFC 6455 §1.3.
        #expect(WebSocketHandshake.accept(forKey: Self.key) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func upgradeRequestsAreGETsNamingWebsocket() {
        #expect(WebSocketHandshake.isUpgrade(HTTPRequestHead(method: "GET", target: "/ws", headers: handshake())))
        #expect(WebSocketHandshake.isUpgrade(HTTPRequestHead(method: "GET", target: "/ws",
                                                             headers: ["Upgrade": "WebSocket"])))
        #expect(!WebSocketHandshake.isUpgrade(HTTPRequestHead(method: "POST", target: "/ws", headers: handshake())))
        #expect(!WebSocketHandshake.isUpgrade(HTTPRequestHead(method: "GET", target: "/ws", headers: ["Upgrade": "h2c"])))
        #expect(!WebSocketHandshake.isUpgrade(HTTPRequestHead(method: "GET", target: "/ws")))
        #expect(!WebSocketHandshake.isUpgrade(HTTPRequestHead(method: "GET", target: "/ws", version: .http1_0,
                                                              headers: handshake())))
    }

    @Test func wellFormedHandshakeGivesItsKey() {
        #expect(WebSocketHandshake.validate(handshake()) == .success(Self.key))
    }

    @Test func malformedHandshakesAreRefused() {
        #expect(WebSocketHandshake.validate(handshake(dropping: ["Connection"])) == .failure(.malformed("Connection must list upgrade")))
        #expect(WebSocketHandshake.validate(handshake(dropping: ["Sec-WebSocket-Version"])) == .failure(.unsupportedVersion))
        #expect(WebSocketHandshake.validate(handshake([("Sec-WebSocket-Version", "8")], dropping: ["Sec-WebSocket-Version"]))
                == .failure(.unsupportedVersion))
        #expect(WebSocketHandshake.validate(handshake([("Sec-WebSocket-Version", "13")])) == .failure(.unsupportedVersion))
        for badKey in ["", "short==", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25jZQ=x", "!!!!!!!!!!!!!!!!!!!!!!=="] {
            #expect(WebSocketHandshake.validate(handshake([("Sec-WebSocket-Key", badKey)], dropping: ["Sec-WebSocket-Key"]))
                    == .failure(.malformed("Sec-WebSocket-Key must be 16 bytes in base64")), "key \(badKey)")
        }
        #expect(WebSocketHandshake.validate(handshake([("Sec-WebSocket-Key", Self.key)]))
                == .failure(.malformed("exactly one Sec-WebSocket-Key is required")))
        #expect(WebSocketHandshake.validate(handshake(dropping: ["Sec-WebSocket-Key"]))
                == .failure(.malformed("exactly one Sec-WebSocket-Key is required")))
    }

    @Test func onlyOurOwnOriginIsAllowed() {
        #expect(WebSocketHandshake.originAllowed(handshake(), publicOrigin: Self.origin))
        #expect(WebSocketHandshake.originAllowed(["Origin": "HTTPS://APP.example.com"], publicOrigin: Self.origin))
        for foreign in ["https://evil.example", "https://app.example.com.evil.example", "http://app.example.com",
                        "https://app.example.com:8443", "null", "", "https://app.example.com/"] {
            #expect(!WebSocketHandshake.originAllowed(["Origin": foreign], publicOrigin: Self.origin), "origin \(foreign)")
        }
        #expect(!WebSocketHandshake.originAllowed([:], publicOrigin: Self.origin))
        #expect(!WebSocketHandshake.originAllowed(HTTPHeaders([("Origin", Self.origin), ("Origin", "https://evil.example")]),
                                                  publicOrigin: Self.origin))
    }

    @Test func upstreamGetsTheSwitchFieldsBack() {
        let headers = WebSocketHandshake.upstreamHeaders(["Sec-WebSocket-Key": Self.key, "Authorization": "Bearer t"])
        #expect(headers.hasToken("Connection", "upgrade"))
        #expect(headers.hasToken("Upgrade", "websocket"))
        #expect(headers["Sec-WebSocket-Key"] == Self.key)
    }

    func upstream101(_ fields: [(String, String)]) -> HTTPResponseHead {
        HTTPResponseHead(status: 101, headers: HTTPHeaders(fields))
    }

    @Test func upstreamAcceptMustMatchTheKey() {
        let good: [(String, String)] = [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                        ("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")]
        #expect(WebSocketHandshake.upstreamProblem(upstream101(good), key: Self.key) == nil)
        #expect(WebSocketHandshake.upstreamProblem(upstream101(good), key: "AAAAAAAAAAAAAAAAAAAAAA==") != nil)
        #expect(WebSocketHandshake.upstreamProblem(upstream101(Array(good.prefix(2))), key: Self.key) != nil)
        #expect(WebSocketHandshake.upstreamProblem(upstream101(good + [("Sec-WebSocket-Accept", "x")]), key: Self.key) != nil)
        #expect(WebSocketHandshake.upstreamProblem(upstream101(Array(good.dropFirst())), key: Self.key) != nil)
        #expect(WebSocketHandshake.upstreamProblem(upstream101([good[0], good[2]]), key: Self.key) != nil)
        #expect(WebSocketHandshake.upstreamProblem(HTTPResponseHead(status: 200, headers: HTTPHeaders(good)), key: Self.key) != nil)
    }

    @Test func browserHeadKeepsProtocolFieldsAndDropsCookies() {
        let head = WebSocketHandshake.browserHead(from: upstream101([
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", "abc"),
            ("Sec-WebSocket-Protocol", "chat"), ("Set-Cookie", "upstream=1")]))
        #expect(head.status == 101)
        #expect(head.headers["Sec-WebSocket-Accept"] == "abc")
        #expect(head.headers["Sec-WebSocket-Protocol"] == "chat")
        #expect(head.headers["Upgrade"] == "websocket")
        #expect(head.headers["Set-Cookie"] == nil)
    }
}

@Suite struct WebSocketFrameTrackerTests {
    func frame(payload: Int, masked: Bool) -> [UInt8] {
        var bytes: [UInt8] = [0x82]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload < 126 {
            bytes.append(UInt8(payload) | maskBit)
        } else if payload <= 0xFFFF {
            bytes.append(126 | maskBit)
            bytes += [UInt8(payload >> 8), UInt8(payload & 0xFF)]
        } else {
            bytes.append(127 | maskBit)
            bytes += (0..<8).reversed().map { UInt8((UInt64(payload) >> (UInt64($0) * 8)) & 0xFF) }
        }
        if masked { bytes += [1, 2, 3, 4] }
        return bytes + [UInt8](repeating: 7, count: payload)
    }

    /// Feeds `bytes` in pieces of `step` and records whether each piece ended on a boundary.
    func boundaries(_ bytes: [UInt8], step: Int) -> [Bool] {
        var tracker = WebSocketFrameTracker()
        var seen: [Bool] = []
        var index = 0
        while index < bytes.count {
            let end = min(bytes.count, index + step)
            bytes[index..<end].withUnsafeBytes { tracker.consume($0) }
            seen.append(tracker.atFrameBoundary)
            index = end
        }
        return seen
    }

    @Test(arguments: [0, 1, 125, 126, 300, 65_535, 65_536, 70_000])
    func everyLengthEncodingEndsOnABoundary(payload: Int) {
        for masked in [false, true] {
            let bytes = frame(payload: payload, masked: masked) + frame(payload: 3, masked: masked)
            for step in [1, 2, 7, 4096, bytes.count] {
                let seen = boundaries(bytes, step: step)
                #expect(seen.last == true, "payload \(payload) masked \(masked) step \(step)")
            }
            // Byte by byte: a boundary exactly after the first frame and at the end, nowhere else.
            let first = frame(payload: payload, masked: masked).count
            let seen = boundaries(bytes, step: 1)
            let expected = seen.indices.map { $0 == first - 1 || $0 == bytes.count - 1 }
            #expect(seen == expected, "payload \(payload) masked \(masked)")
        }
    }

    @Test func closeFrames() {
        #expect(WebSocketFrameTracker.closeFrame(.goingAway, reason: "bye", masked: false)
                == [0x88, 0x05, 0x03, 0xE9] + Array("bye".utf8))
        let masked = WebSocketFrameTracker.closeFrame(.policyViolation, reason: "session ended", masked: true)
        #expect(masked[0] == 0x88 && masked[1] == 0x80 | 15)
        let mask = Array(masked[2..<6])
        let payload = masked[6...].enumerated().map { $0.element ^ mask[$0.offset % 4] }
        #expect(payload == [0x03, 0xF0] + Array("session ended".utf8))
        // A close frame is itself a whole frame for the tracker.
        #expect(boundaries(masked, step: 1).last == true)
        let long = WebSocketFrameTracker.closeFrame(.goingAway, reason: String(repeating: "x", count: 500), masked: false)
        #expect(long.count == 2 + 125)
    }
}
