import CCurl
#if canImport(Glibc)
import Glibc
#endif
import EventLoops

/// One libcurl easy handle and what must live as long as it: the header list, the error buffer,
/// and the head collector. Created, used and destroyed on the curl multi thread only; libcurl's
/// callbacks reach it through the `userdata` pointer (unretained: `CurlMultiLoop` holds it until the
/// handle has left the multi handle).
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    let transfer: CurlTransfer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var collector = CurlHeadCollector()
    /// The request's method: the answer's framing depends on it (`HEAD`, `CONNECT`).
    private let method: String
    /// A bodiless `GET`, `HEAD` or `OPTIONS`: the only requests libcurl may send a second time.
    private let mayBeRepeated: Bool
    /// How many times libcurl has been about to send the request (see `beforeSendingRequest`).
    private var attempts = 0
    var headArrived: Bool { collector.head != nil }
    /// Monotonic time of the last sign of life from the upstream (or of waiting on the browser).
    var lastActivity: UInt64

    init(transfer: CurlTransfer, plan: CurlRequestPlan, now: UInt64) throws(UpstreamError) {
        guard let handle = curl_easy_init() else { throw .connectFailed("curl_easy_init failed") }
        self.handle = handle
        self.transfer = transfer
        method = plan.method
        mayBeRepeated = plan.mayBeRepeated
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        lastActivity = now
        do throws(UpstreamError) {
            try configure(plan)
        } catch {
            release()
            throw error
        }
    }

    /// Frees the handle. Call only once it is no longer in the multi handle.
    func release() {
        curl_easy_cleanup(handle)
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        errorBuffer.deallocate()
    }

    /// libcurl's own words for the last failure, when it left any.
    var errorDetail: String { String(cString: errorBuffer) }

    // MARK: Configuration

    private func configure(_ plan: CurlRequestPlan) throws(UpstreamError) {
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_URL, plan.url)
        // Only the plan's schemes (https for upstreams), never a redirect followed, no proxy from
        // the environment, no signals (we are one thread among many), no content decoding (bytes
        // and Content-Encoding pass as is).
        try set(CURLOPT_PROTOCOLS_STR, plan.protocols)
        try set(CURLOPT_REDIR_PROTOCOLS_STR, plan.protocols)
        try set(CURLOPT_FOLLOWLOCATION, 0)
        try set(CURLOPT_PROXY, "")
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_HTTP_CONTENT_DECODING, 0)
        try set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        try check(CurlTrust.apply(to: handle))
        // The target is the browser's, already normalised by the route: no dot-segment squashing.
        try set(CURLOPT_PATH_AS_IS, 1)
        try set(CURLOPT_CONNECTTIMEOUT_MS, transfer.limits.connectTimeoutMilliseconds)
        if let total = plan.totalTimeoutMilliseconds { try set(CURLOPT_TIMEOUT_MS, max(1, total)) }
        try set(CURLOPT_BUFFERSIZE, 64 << 10)
        try set(CURLOPT_UPLOAD_BUFFERSIZE, 64 << 10)
        try check(gatehouse_curl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))

        try check(gatehouse_curl_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, curlHeaderCallback))
        try check(gatehouse_curl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, userdata))
        try check(gatehouse_curl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, curlWriteCallback))
        try check(gatehouse_curl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, userdata))
        try check(gatehouse_curl_easy_setopt_prereq_callback(handle, curlPrereqCallback))
        try check(gatehouse_curl_easy_setopt_pointer(handle, CURLOPT_PREREQDATA, userdata))

        switch plan.method {
        case "GET": break
        case "HEAD": try set(CURLOPT_NOBODY, 1)
        default: try set(CURLOPT_CUSTOMREQUEST, plan.method)
        }
        switch plan.upload {
        case .none:
            break
        case .length(let length):
            try enableUpload(userdata)
            try check(gatehouse_curl_easy_setopt_off_t(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(length)))
        case .chunked:
            // Without a size libcurl frames an HTTP/1.1 upload as chunked.
            try enableUpload(userdata)
        case .whole(let body):
            // The size first: COPYPOSTFIELDS then copies that many bytes (NULs included).
            try check(gatehouse_curl_easy_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            // An empty body still needs a valid pointer (libcurl copies zero bytes from it).
            var bytes = body.isEmpty ? [0] : body
            try check(bytes.withUnsafeMutableBytes { raw in
                gatehouse_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, raw.baseAddress)
            })
        }

        for line in plan.headerLines {
            guard let appended = curl_slist_append(headerList, line) else {
                throw .connectFailed("curl_slist_append failed")
            }
            headerList = appended
        }
        try check(gatehouse_curl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))
    }

    private func enableUpload(_ userdata: UnsafeMutableRawPointer) throws(UpstreamError) {
        try set(CURLOPT_UPLOAD, 1)
        try check(gatehouse_curl_easy_setopt_read_callback(handle, curlReadCallback))
        try check(gatehouse_curl_easy_setopt_pointer(handle, CURLOPT_READDATA, userdata))
    }

    private func set(_ option: CURLoption, _ value: Int) throws(UpstreamError) {
        try check(gatehouse_curl_easy_setopt_long(handle, option, value))
    }

    private func set(_ option: CURLoption, _ value: String) throws(UpstreamError) {
        try check(gatehouse_curl_easy_setopt_string(handle, option, value))
    }

    private func check(_ code: CURLcode) throws(UpstreamError) {
        guard code == CURLE_OK else {
            throw .invalidRequest("libcurl refused an option: \(String(cString: curl_easy_strerror(code)))")
        }
    }

    // MARK: Callbacks (on the multi thread, inside curl_multi_perform / curl_easy_pause)

    /// False stops the transfer (libcurl then closes the connection): the final head's framing is
    /// ambiguous, and not one byte of its body may be read as if it were not.
    fileprivate func headerLine(_ line: UnsafeRawBufferPointer, now: UInt64) -> Bool {
        lastActivity = now
        if collector.consume(line), let head = collector.head {
            do throws(UpstreamError) {
                let framing = try UpstreamResponseFraming(head, requestMethod: method, version: collector.version)
                transfer.deliverHead(head, framing: framing)
            } catch {
                transfer.complete(.failed(error))
                return false
            }
        }
        return true
    }

    /// libcurl is about to send the request, on a new or reused connection. When a reused
    /// connection dies before any answer byte, libcurl sends the request again on a fresh one (up
    /// to five times, whatever the method): the upstream may then run a `POST` twice. As on the
    /// `http://` path (`UpstreamClient.mayRetry`), only a bodiless `GET`, `HEAD` or `OPTIONS` gets
    /// one more attempt; anything else fails (`502`). False aborts the transfer.
    fileprivate func beforeSendingRequest() -> Bool {
        attempts += 1
        return attempts == 1 || (attempts == 2 && mayBeRepeated)
    }

    fileprivate func body(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> Bool {
        lastActivity = now
        return transfer.acceptDownload(bytes)
    }

    fileprivate func readUpload(into buffer: UnsafeMutableRawBufferPointer, now: UInt64) -> CurlTransfer.UploadStep {
        let step = transfer.readUpload(into: buffer)
        if case .bytes = step { lastActivity = now }
        return step
    }

    /// The error libcurl's result code stands for, worded for an operator.
    func error(for code: CURLcode) -> UpstreamError {
        let detail = errorDetail.isEmpty ? String(cString: curl_easy_strerror(code)) : errorDetail
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            // No overall CURLOPT_TIMEOUT is set: libcurl's only timer is the connect timeout.
            return headArrived ? .bodyTimeout : .connectTimeout
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR,
             CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
             CURLE_SSL_INVALIDCERTSTATUS:
            return .connectFailed(detail)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return .invalidRequest(detail)
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE:
            return .connectionClosed
        case CURLE_ABORTED_BY_CALLBACK:
            // Only `beforeSendingRequest` aborts: the reused connection died and no retry is allowed.
            return .connectionClosed
        default:
            return .invalidResponse(detail)
        }
    }
}

// libcurl's callbacks: C function pointers that find their `CurlEasy` through `userdata`.

private func curlHeaderCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                                _ userdata: UnsafeMutableRawPointer?) -> Int {
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard let userdata, !overflow else { return 0 }
    let easy = Unmanaged<CurlEasy>.fromOpaque(userdata).takeUnretainedValue()
    // Anything but `total` makes libcurl fail the transfer (CURLE_WRITE_ERROR).
    return easy.headerLine(UnsafeRawBufferPointer(start: data, count: total), now: EventLoop.monotonicNow()) ? total : 0
}

private func curlWriteCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                               _ userdata: UnsafeMutableRawPointer?) -> Int {
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard let userdata, !overflow else { return 0 }
    let easy = Unmanaged<CurlEasy>.fromOpaque(userdata).takeUnretainedValue()
    guard easy.body(UnsafeRawBufferPointer(start: data, count: total), now: EventLoop.monotonicNow()) else {
        return gatehouse_curl_writefunc_pause()
    }
    return total
}

private func curlPrereqCallback(_ userdata: UnsafeMutableRawPointer?, _ primaryIP: UnsafeMutablePointer<CChar>?,
                                _ localIP: UnsafeMutablePointer<CChar>?, _ primaryPort: Int32, _ localPort: Int32) -> Int32 {
    guard let userdata else { return gatehouse_curl_prereqfunc_abort() }
    let easy = Unmanaged<CurlEasy>.fromOpaque(userdata).takeUnretainedValue()
    return easy.beforeSendingRequest() ? gatehouse_curl_prereqfunc_ok() : gatehouse_curl_prereqfunc_abort()
}

private func curlReadCallback(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                              _ userdata: UnsafeMutableRawPointer?) -> Int {
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard let userdata, let buffer, !overflow else { return gatehouse_curl_readfunc_abort() }
    let easy = Unmanaged<CurlEasy>.fromOpaque(userdata).takeUnretainedValue()
    switch easy.readUpload(into: UnsafeMutableRawBufferPointer(start: buffer, count: total), now: EventLoop.monotonicNow()) {
    case .bytes(let n): return n
    case .end: return 0
    case .pause: return gatehouse_curl_readfunc_pause()
    case .abort: return gatehouse_curl_readfunc_abort()
    }
}
