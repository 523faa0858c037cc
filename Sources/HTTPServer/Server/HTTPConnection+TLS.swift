#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import TLSTransport

/// An HTTPS connection's records (`tls`): the handshake before the first head, reads and writes
/// through OpenSSL, and readiness that crosses directions (a TLS read may need the socket writable
/// and a write may need it readable: a TLS 1.3 key update, say).
///
/// The handshake runs on the loop like any read, under the head deadline armed at `start`: a client
/// that stalls mid-handshake is closed like one that stalls mid-head, and a failed handshake closes
/// the connection without an answer (there is no channel to answer on).
extension HTTPConnection {
    func continueHandshake() {
        guard state == .handshaking, let tls else { return }
        switch tls.handshake() {
        case .done:
            if tls.isACMEChallenge {
                close()
                return
            }
            state = .awaitingHead
            // The client may have sent its first request with its Finished: OpenSSL holds it, and
            // no edge will say so.
            readReady = true
            processInput()
        case .wantRead:
            readReady = false
        case .wantWrite:
            break
        case .closed, .failed:
            close()
        }
    }

    /// Runs the other direction's pending work when this readiness is what it waited for. Returns
    /// true when the caller has nothing more to do: the readiness went to the handshake, or the
    /// connection ended meanwhile.
    func tlsReadinessCrossed(readable: Bool) -> Bool {
        if state == .handshaking {
            continueHandshake()
            return true
        }
        if readable, tlsWriteWaitsForReadable {
            tlsWriteWaitsForReadable = false
            flush()
        } else if !readable, tlsReadWaitsForWritable {
            tlsReadWaitsForWritable = false
            readReady = true
            socketReadable()
        }
        return state == .closed
    }

    /// Reads records into the input buffer: as `readSocket`, except that only `.wantRead` means the
    /// socket is drained (OpenSSL hands over one record at a time).
    func readTLS(_ tls: TLSStream, maximum: Int) -> Bool {
        let step = input.fill(maximum: maximum) { start, count in
            let step = tls.read(into: start, count: count)
            if case .done(let n) = step { return (n, step) }
            return (0, step)
        }
        switch step {
        case .done:
            return true
        case .wantRead:
            readReady = false
            return true
        case .wantWrite:
            readReady = false
            tlsReadWaitsForWritable = true
            return true
        case .closed, .failed:
            peerClosed = true
            readReady = false
            return false
        }
    }

    /// One `SSL_write` of the unsent output. False when the caller must stop: the socket is full
    /// (the send-progress deadline then runs, as for plain sockets) or the connection is closed.
    func flushTLS(_ tls: TLSStream, progressSince start: Int) -> Bool {
        let step = output.withUnsafeBytes { raw in
            tls.write(raw.baseAddress! + outputOffset, count: raw.count - outputOffset)
        }
        switch step {
        case .done(let n):
            outputOffset += n
            return true
        case .wantWrite, .wantRead:
            if step == .wantRead { tlsWriteWaitsForReadable = true }
            deadlines.sendBlocked(moved: outputOffset > start, now: loop.now)
            return false
        case .closed, .failed:
            close()
            return false
        }
    }
}
