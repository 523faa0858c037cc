#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1

/// The output buffer on its way to the socket (with the send-progress deadline), deadlines, and
/// closing.
extension HTTPConnection {
    // MARK: Writing

    /// Sends what is queued. `progressSince`: where the bytes of this answer began when some of them
    /// already left in `sendHeadAndBody` (a send that then blocks still counts as progress).
    func flush(progressSince start: Int? = nil) {
        let startOffset = start ?? outputOffset
        while outputOffset < output.count {
            if let tls {
                guard flushTLS(tls, progressSince: startOffset) else { return }
                continue
            }
            let n = output.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + outputOffset, raw.count - outputOffset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                outputOffset += n
                continue
            }
            let err = errno
            if n < 0 && err == EINTR { continue }
            if n < 0 && (err == EAGAIN || err == EWOULDBLOCK) {
                // Output is waiting for the client: the connection lives as long as the client keeps
                // reading. Only bytes that leave extend it; new answers queued behind do not.
                deadlines.sendBlocked(moved: outputOffset > startOffset, now: loop.now)
                return
            }
            close()
            return
        }
        // An answer's capacity is kept for the next one unless it is large; what an idle
        // connection keeps is trimmed by the sweep (`releaseBuffersIfIdle`).
        output.removeAll(keepingCapacity: output.capacity <= Self.busyOutputCapacity)
        outputOffset = 0
        // The previous response is out: back to waiting for the next request.
        deadlines.sendCompleted(awaitingHead: state == .awaitingHead, inputBuffered: !input.isEmpty, now: loop.now)
        if let waiter = drainWaiter {
            drainWaiter = nil
            waiter.resume(returning: true)
        }
        if state == .lingering && closeWhenFlushed { shutdownWriteAndLinger() }
    }

    /// Ends the connection, but only after the answers already queued are sent: neither the client's
    /// EOF (a client may half-close after its requests and still read) nor a body it will not finish
    /// may cut them off (found by the connection fuzzer with small socket buffers).
    func closeOnceSent() {
        if outputOffset < output.count { closeAfterFlush() } else { close() }
    }

    func closeAfterFlush() {
        state = .lingering
        closeWhenFlushed = true
        if outputOffset >= output.count {
            shutdownWriteAndLinger()
        } else {
            // The linger period starts once the answer is out; until then the client must keep
            // reading (`sendDeadline`).
            deadlines.clear()
        }
    }

    /// Half-closes, then reads and discards what the client still sends, so our final answer is not
    /// destroyed by a TCP reset caused by unread data (nginx's lingering close).
    func shutdownWriteAndLinger() {
        closeWhenFlushed = false
        deadlines.arm(.linger, now: loop.now)
        tls?.sendCloseNotify()
        shutdown(fd, Int32(SHUT_WR))
        discardUntilEOF()
    }

    func discardUntilEOF() {
        guard state == .lingering, !closeWhenFlushed else { return }
        var scratch = [UInt8](repeating: 0, count: 4096)
        if let tls {
            // Records after our close_notify are read and dropped; their end (EOF, the client's
            // close_notify, or a broken record) ends the linger.
            while true {
                let step = scratch.withUnsafeMutableBytes { tls.read(into: $0.baseAddress!, count: $0.count) }
                switch step {
                case .done: continue
                case .wantRead, .wantWrite: return
                case .closed, .failed: close(); return
                }
            }
        }
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n > 0 { continue }
            if n == 0 { close(); return }
            let err = errno
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return }
            close()
            return
        }
    }

    // MARK: Deadlines and closing

    func checkDeadline(now: UInt64) {
        switch deadlines.expiry(now: now) {
        case .none:
            break
        case .headTimedOut:
            if state == .handshaking { close(); return }
            if state == .awaitingHead {
                refuse(status: 408, description: "The request head did not arrive in time.")
            }
        case .close:
            close()
        }
    }

    func beginShutdown() {
        shuttingDown = true
        turn.keepAlive = false
        if state == .handshaking { close(); return }
        if state == .awaitingHead && input.isEmpty {
            if outputOffset < output.count { closeAfterFlush() } else { close() }
        }
    }

    func close() {
        guard state != .closed, state != .upgraded else { return }
        state = .closed
        loop.deregister(fd)
        if let tls {
            self.tls = nil
            tls.free(sendCloseNotify: false)
        }
        Glibc.close(fd)
        if let waiter = bodyWaiter {
            bodyWaiter = nil
            waiter.resume(returning: .failure(.connectionClosed))
        }
        if let waiter = drainWaiter {
            drainWaiter = nil
            waiter.resume(returning: false)
        }
        current = nil
        runner?.close()
        runner = nil
        listener.removed(self)
    }
}
