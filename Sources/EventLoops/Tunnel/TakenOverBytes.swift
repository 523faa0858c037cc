/// What a tunnel endpoint takes over from the connection's previous owner: the bytes it had already
/// read past the handshake (`leftover`, handed out before the socket is read again) and the ones it
/// had not sent yet (`unsent`, the end of a 101 head: sent before anything else). Both kinds of
/// endpoint (plain socket, TLS) keep theirs here, so nothing between the HTTP exchange and the
/// tunnel is lost or reordered.
public struct TakenOverBytes {
    private var leftover: [UInt8]
    private var leftoverOffset = 0
    private var unsent: [UInt8]
    private var unsentOffset = 0

    public init(leftover: [UInt8], unsent: [UInt8]) {
        self.leftover = leftover
        self.unsent = unsent
    }

    public var hasLeftover: Bool { leftoverOffset < leftover.count }
    public var hasUnsent: Bool { unsentOffset < unsent.count }

    /// Copies leftover bytes into `buffer`: how many, or nil when none are left.
    public mutating func takeLeftover(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard hasLeftover else { return nil }
        let n = min(buffer.count, leftover.count - leftoverOffset)
        let offset = leftoverOffset
        leftover.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
        leftoverOffset += n
        if leftoverOffset == leftover.count { leftover = []; leftoverOffset = 0 }
        return n
    }

    /// Sends the unsent bytes with `sendSome` until they are gone (nil) or it stops (what it said).
    public mutating func flushUnsent(_ sendSome: (UnsafeRawBufferPointer) -> TunnelIO) -> TunnelIO? {
        while hasUnsent {
            let offset = unsentOffset
            let result = unsent.withUnsafeBytes { raw in sendSome(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            guard case .bytes(let n) = result else { return result }
            unsentOffset += n
            if unsentOffset == unsent.count { unsent = []; unsentOffset = 0 }
        }
        return nil
    }
}
