import EventLoops
import HTTP1

/// The client for `https://` upstreams: libcurl (OpenSSL, the system CA bundle) in one multi handle
/// on its own thread, so connections are kept and reused across requests (see `CurlMulti`).
///
/// Both bodies stream with back-pressure (see `CurlTransfer`): the request body is read from the
/// browser only as fast as the upstream takes it, and the response body is read from the upstream
/// only as fast as the browser takes it; at most about `uploadBuffer` + `downloadBuffer` bytes per
/// exchange wait in memory. Redirects are answers (never followed), content codings pass untouched,
/// and libcurl's own re-sending after a dead reused connection is limited to one more attempt of a
/// bodiless `GET`, `HEAD` or `OPTIONS` (`CurlEasy.beforeSendingRequest`).
///
/// For example:
/// ```swift
/// let response = try await client.send(request, body: body, timeouts: timeouts, maxBodyBytes: 10 << 20)
/// while let piece = try await response.nextBodyPiece() { … }
/// ```
public final class HTTPSUpstreamClient: Sendable {
    public typealias Timeouts = UpstreamTimeouts

    private let multi: Result<CurlMulti, UpstreamError>

    /// Starts the client's thread. `maxCachedConnections` bounds the idle connections kept for reuse.
    public init(maxCachedConnections: Int = 64) {
        do throws(UpstreamError) {
            multi = .success(try CurlMulti(maxCachedConnections: maxCachedConnections))
        } catch {
            multi = .failure(error)
        }
    }

    /// Sends a request and returns once the final response head has arrived; the request body (if
    /// any) keeps streaming from `body` meanwhile. A body over `maxBodyBytes` fails the exchange
    /// with `.requestBody(.tooLarge)`.
    public func send(_ request: UpstreamRequest, body: (any HTTPRequestBody)?, timeouts: Timeouts = Timeouts(),
                     maxBodyBytes: Int = .max) async throws(UpstreamError) -> HTTPSUpstreamResponse {
        let multi = try self.multi.get()
        let declared = body?.declaredLength
        if let declared, declared > maxBodyBytes { throw .requestBody(.tooLarge(limit: maxBodyBytes)) }
        let hasBody = body != nil && declared != 0
        var limits = CurlTransfer.Limits()
        limits.connectTimeoutMilliseconds = Int(min(timeouts.connectNanoseconds / 1_000_000, UInt64(Int32.max)))
        limits.firstByteNanoseconds = timeouts.firstByteNanoseconds
        limits.bodyIdleNanoseconds = timeouts.bodyIdleNanoseconds
        let transfer = CurlTransfer(multi: multi, limits: limits)
        multi.post(.start(transfer, CurlRequestPlan(request, bodyLength: declared, hasBody: hasBody)))
        if let body, hasBody {
            // Unstructured, because the upload may go on after the head has arrived and `send`
            // returned; it ends with the transfer (`waitForUploadRoom` answers false) or with the
            // browser's exchange (its `next()` then throws). On the caller's loop when there is one.
            Task(executorPreference: EventLoop.current) {
                await Self.pump(body, into: transfer, limit: maxBodyBytes)
            }
        }
        let head: Result<(HTTPResponseHead, UpstreamResponseFraming), UpstreamError> = await withTaskCancellationHandler {
            do throws(UpstreamError) { return .success(try await transfer.awaitHead()) } catch { return .failure(error) }
        } onCancel: {
            transfer.cancel()
        }
        switch head {
        case .success(let (head, framing)):
            return HTTPSUpstreamResponse(head: head, framing: framing, transfer: transfer)
        case .failure(let error):
            transfer.cancel()
            throw error
        }
    }

    /// Reads the browser's body piece by piece while the transfer has room for it.
    private static func pump(_ body: any HTTPRequestBody, into transfer: CurlTransfer, limit: Int) async {
        var sent = 0
        while await transfer.waitForUploadRoom() {
            let piece: [UInt8]?
            do { piece = try await body.next() } catch {
                return transfer.failUpload(error)
            }
            guard let piece else { return transfer.endUpload() }
            guard piece.count <= limit - sent else { return transfer.failUpload(.tooLarge(limit: limit)) }
            sent += piece.count
            transfer.pushUpload(piece)
        }
    }
}

/// A response whose final head has arrived; read its body with `nextBodyPiece()` to the end, or
/// `discard()` it (then its connection is closed, never reused half-read). Dropping it discards it.
public final class HTTPSUpstreamResponse: Sendable {
    public let head: HTTPResponseHead
    /// Decided on the curl thread as the head arrived, by the rules of the `http://` client
    /// (`UpstreamResponseFraming`); an ambiguous head never gets here (`send` throws).
    public let framing: UpstreamResponseFraming
    private let transfer: CurlTransfer

    init(head: HTTPResponseHead, framing: UpstreamResponseFraming, transfer: CurlTransfer) {
        self.head = head
        self.framing = framing
        self.transfer = transfer
    }

    deinit { transfer.cancel() }

    /// The next piece of the body, nil at its end. Pieces arrive as the upstream sends them (an
    /// event of a server-sent event stream is not held back), coalesced when several wait.
    public func nextBodyPiece() async throws(UpstreamError) -> [UInt8]? {
        let next: Result<[UInt8]?, UpstreamError> = await withTaskCancellationHandler {
            do throws(UpstreamError) { return .success(try await transfer.nextBodyPiece()) } catch { return .failure(error) }
        } onCancel: {
            transfer.cancel()
        }
        return try next.get()
    }

    /// Gives up on the rest of the body.
    public func discard() {
        transfer.cancel()
    }
}
