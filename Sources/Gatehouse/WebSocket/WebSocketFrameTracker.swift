/// Follows the frame boundaries of one direction of a WebSocket (RFC 6455 §5.2) without keeping
/// or interpreting payloads, so the gateway knows when it may put a frame of its own (a close
/// frame at shutdown, idle timeout or the end of the session) into the stream without cutting
/// another frame in two. Control frames may come between the fragments of a message (§5.4), so a
/// frame boundary is enough.
struct WebSocketFrameTracker {
    /// Header bytes of the frame in progress, while its header is incomplete (at most 14).
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to come.
    private(set) var payloadRemaining: UInt64 = 0

    /// True between two frames.
    var atFrameBoundary: Bool { header.isEmpty && payloadRemaining == 0 }

    mutating func consume(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        let count = bytes.count
        while index < count {
            if payloadRemaining > 0 {
                let skipped = min(payloadRemaining, UInt64(count - index))
                index += Int(skipped)
                payloadRemaining -= skipped
                continue
            }
            header.append(bytes[index])
            index += 1
            guard header.count >= 2 else { continue }
            let shortLength = header[1] & 0x7F
            let masked = header[1] & 0x80 != 0
            let extended = shortLength == 126 ? 2 : (shortLength == 127 ? 8 : 0)
            guard header.count == 2 + extended + (masked ? 4 : 0) else { continue }
            var length = UInt64(shortLength)
            if extended > 0 {
                length = 0
                for byte in header[2..<(2 + extended)] { length = length << 8 | UInt64(byte) }
            }
            header = []
            payloadRemaining = length
        }
    }

    /// Close codes the gateway sends (RFC 6455 §7.4.1).
    enum CloseCode: UInt16 {
        /// The gateway shuts down, or the socket was idle too long.
        case goingAway = 1001
        /// The session behind the socket ended (logout, revocation, expiry).
        case policyViolation = 1008
    }

    /// A close frame with `code` and a short reason. Frames towards the upstream (a server) must be
    /// masked (§5.3); frames towards the browser must not be.
    static func closeFrame(_ code: CloseCode, reason: String, masked: Bool) -> [UInt8] {
        var payload: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        payload.append(contentsOf: reason.utf8.prefix(123))
        var frame: [UInt8] = [0x88, UInt8(payload.count) | (masked ? 0x80 : 0)]
        if masked {
            var generator = SystemRandomNumberGenerator()
            let mask = (0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) }
            frame.append(contentsOf: mask)
            for (i, byte) in payload.enumerated() { frame.append(byte ^ mask[i % 4]) }
        } else {
            frame.append(contentsOf: payload)
        }
        return frame
    }
}
