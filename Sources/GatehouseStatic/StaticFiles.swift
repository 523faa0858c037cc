import HTTP1
import HTTPServer
import Logging

/// Serves the single-page app's files from one folder (`GATEHOUSE_PUBLIC_DIR`).
///
/// `respond(to:)` is synchronous and cheap on a cache hit (one `stat`), so the gateway can call it from
/// `HTTPHandler.immediateResponse` on the event loop. It answers GET and HEAD with the right
/// `Content-Type`, a strong `ETag`, `Last-Modified`, conditional `304`s, gzip for text formats, single
/// byte ranges, and the SPA fallback to `index.html` for navigations to client-side routes.
/// Security headers (`nosniff`, CSP, ...) are added by the gateway, not here.
///
/// For example:
/// ```swift
/// let files = StaticFiles(root: "Public", logger: logger)
/// if case .response(let response) = files.respond(to: request.head) { await writer.respond(response) }
/// ```
public final class StaticFiles: Sendable {
    /// Size limits; the defaults suit an SPA's bundle.
    public struct Limits: Sendable {
        /// Files up to this size are held in memory and answered in one write; larger ones stream.
        public var maximumCachedFileSize: Int
        /// Compressible files larger than this are worth gzipping (below, headers outweigh the gain).
        public var minimumCompressibleSize: Int
        /// Compressible files up to this size are gzipped (once, then cached). Compression runs on the
        /// calling thread, so this bounds the one-time pause on the event loop.
        public var maximumCompressibleSize: Int
        /// Memory for cached bodies and their gzip variants together.
        public var cacheBudget: Int

        public init(maximumCachedFileSize: Int = 1 << 20, minimumCompressibleSize: Int = 1024,
                    maximumCompressibleSize: Int = 4 << 20, cacheBudget: Int = 64 << 20) {
            self.maximumCachedFileSize = maximumCachedFileSize
            self.minimumCompressibleSize = minimumCompressibleSize
            self.maximumCompressibleSize = maximumCompressibleSize
            self.cacheBudget = cacheBudget
        }
    }

    /// The canonical root, or nil when the folder does not exist (every request is then a `404`).
    public let root: String?
    private let rootPrefix: String
    private let limits: Limits
    private let cache: FileCache
    private let logger: Logger

    /// - Parameters:
    ///   - root: the folder to serve; may be relative (resolved with `realpath` once, here).
    ///   - logger: receives refusals (debug), escaping symlinks (warning) and read errors (error).
    public convenience init(root: String, logger: Logger) {
        self.init(root: root, logger: logger, limits: Limits())
    }

    public init(root: String, logger: Logger, limits: Limits) {
        let resolved = FileSystem.realPath(root)
        if let resolved, FileSystem.identity(of: resolved)?.isDirectory == true {
            self.root = resolved
        } else {
            self.root = nil
            logger.error("static file folder not found; every file request will answer 404",
                         metadata: ["static.root": "\(root)"])
        }
        rootPrefix = self.root.map { $0.hasSuffix("/") ? $0 : $0 + "/" } ?? "/"
        self.limits = limits
        self.cache = FileCache(budget: limits.cacheBudget)
        self.logger = logger
    }

    /// Decides the answer for a request. Methods other than GET and HEAD get `405`.
    public func respond(to head: HTTPRequestHead) -> StaticAnswer {
        guard head.method == "GET" || head.method == "HEAD" else {
            return .response(StaticErrorResponse.methodNotAllowed())
        }
        let path: RequestPath
        do {
            path = try RequestPath.parse(head.path)
        } catch {
            switch error {
            case .malformedEncoding:
                return .response(StaticErrorResponse.malformedPath())
            case .forbidden(let reason):
                logger.debug("static path refused", metadata: ["static.refusal": "\(reason)"])
                return .response(StaticErrorResponse.notFound())
            }
        }

        switch lookup(path.segments) {
        case .found(let key, let entry):
            return answer(entry, key: key, to: head, varyOnAccept: false)
        case .forbidden:
            return .response(StaticErrorResponse.notFound())
        case .unreadable:
            return .response(StaticErrorResponse.unreadable())
        case .missing:
            // SPA fallback: a navigation to a client-side route (`/orders/42`) gets the app's entry page.
            if ContentNegotiation.explicitlyAcceptsHTML(head.headers.values("Accept")),
               case .found(let key, let index) = lookup([]), index.mediaType.isHTML {
                return answer(index, key: key, to: head, varyOnAccept: true)
            }
            return .response(StaticErrorResponse.notFound(varyOnAccept: true))
        }
    }

    /// Answers a request completely: `respond(to:)`, then streams when the answer is a large file.
    /// For handlers that did not already answer from `immediateResponse`.
    public func serve(_ head: HTTPRequestHead, to writer: any HTTPResponseWriter) async {
        switch respond(to: head) {
        case .response(let response):
            await writer.respond(response)
        case .file(let responseHead, let path, let range):
            await StaticFileStreamer.stream(path: path, range: range, head: responseHead,
                                            isHEAD: head.method == "HEAD", to: writer)
        }
    }

    // MARK: - Finding the file

    private enum Lookup {
        case found(key: String, CachedFile)
        case missing
        case forbidden
        case unreadable
    }

    private func lookup(_ segments: [String]) -> Lookup {
        guard let root else { return .missing }
        var path = segments.isEmpty ? root : rootPrefix + segments.joined(separator: "/")
        var name = segments.last ?? ""
        guard var identity = FileSystem.identity(of: path) else { return .missing }
        if identity.isDirectory {
            path += path.hasSuffix("/") ? "index.html" : "/index.html"
            name = "index.html"
            guard let index = FileSystem.identity(of: path) else { return .missing }
            identity = index
        }
        guard identity.isRegularFile else { return .missing }
        if let cached = cache.entry(for: path, matching: identity) { return .found(key: path, cached) }

        // Cache miss: the one place where symlinks are resolved and checked against the root.
        guard let realPath = FileSystem.realPath(path) else { return .missing }
        guard realPath.hasPrefix(rootPrefix) else {
            logger.warning("static file refused: its real path leaves the public folder",
                           metadata: ["static.file": "\(String(name.prefix(100)))"])
            return .forbidden
        }
        do {
            let entry = try makeEntry(realPath: realPath, name: name, identity: identity)
            cache.store(entry, for: path)
            return .found(key: path, entry)
        } catch {
            logger.error("static file unreadable",
                         metadata: ["static.file": "\(String(name.prefix(100)))",
                                    "static.call": "\(error.call)", "static.errno": "\(error.errno)"])
            return .unreadable
        }
    }

    private func makeEntry(realPath: String, name: String, identity: FileIdentity) throws(FileSystemError) -> CachedFile {
        var identity = identity
        var body: [UInt8]?
        if identity.size <= limits.maximumCachedFileSize {
            let (read, bytes) = try FileSystem.readFile(realPath)
            identity = read
            body = bytes
        }
        let mediaType = MediaType.forFile(named: name)
        let lastModifiedSeconds = min(max(identity.modificationSeconds, 0), 253_402_300_799)  // years 1970...9999
        let compressible = mediaType.compressible && identity.size > limits.minimumCompressibleSize
            && identity.size <= limits.maximumCompressibleSize
        return CachedFile(identity: identity, realPath: realPath, mediaType: mediaType,
                          entityTag: EntityTag.forFile(size: identity.size,
                                                       modificationNanoseconds: identity.modificationNanoseconds),
                          lastModified: HTTPDate.format(lastModifiedSeconds),
                          lastModifiedSeconds: lastModifiedSeconds,
                          cacheControl: CachePolicy.cacheControl(fileName: name, mediaType: mediaType),
                          body: body,
                          gzip: compressible ? .notYetCompressed : .notApplicable)
    }

    /// Compresses the file on first demand and caches the result with the entry.
    private func gzipBytes(_ entry: CachedFile, key: String) -> [UInt8]? {
        switch entry.gzip {
        case .compressed(let bytes): return bytes
        case .notApplicable, .notSmaller: return nil
        case .notYetCompressed: break
        }
        var variant = GzipVariant.notSmaller
        do {
            var source = entry.body
            if source == nil {
                let (read, bytes) = try FileSystem.readFile(entry.realPath)
                guard read == entry.identity else { return nil }  // changed meanwhile: next request
                source = bytes
            }
            if let source {
                let compressed = try Gzip.compress(source)
                if compressed.count < source.count { variant = .compressed(compressed) }
            }
        } catch {
            logger.error("static file not compressed", metadata: ["static.error": "\(error)"])
        }
        cache.storeGzip(variant, for: key, identity: entry.identity)
        if case .compressed(let bytes) = variant { return bytes }
        return nil
    }

    // MARK: - Answering

    private func answer(_ entry: CachedFile, key: String, to request: HTTPRequestHead, varyOnAccept: Bool) -> StaticAnswer {
        let isHEAD = request.method == "HEAD"
        let length = entry.identity.size

        // RFC 9110 §14.2: Range is defined for GET only; §13.1.5: If-Range turns it off when stale.
        var range = RangeRequest.whole
        if !isHEAD, let value = request.headers["Range"], ifRangeHolds(request.headers["If-Range"], entry) {
            range = RangeRequest.parse(value, length: length)
        }
        // A range is served from the identity bytes: offsets into a gzip stream would be useless.
        var gzip: [UInt8]?
        if range == .whole, entry.mayVaryByEncoding, ContentNegotiation.acceptsGzip(request.headers) {
            gzip = gzipBytes(entry, key: key)
        }
        let entityTag = gzip == nil ? entry.entityTag : entry.gzipEntityTag

        // RFC 9110 §13.2.2: If-None-Match first; If-Modified-Since only when it is absent.
        let notModified: Bool
        if request.headers.contains("If-None-Match") {
            notModified = EntityTag.noneMatchHits(request.headers.values("If-None-Match"), current: entityTag)
        } else if let since = request.headers["If-Modified-Since"], let date = HTTPDate.parse(since) {
            notModified = entry.lastModifiedSeconds <= date
        } else {
            notModified = false
        }

        var headers: HTTPHeaders
        if notModified || varyOnAccept {
            headers = CachedFile.validatorHeaders(entityTag: entityTag, lastModified: entry.lastModified,
                                                  cacheControl: entry.cacheControl,
                                                  varyOnEncoding: entry.mayVaryByEncoding, varyOnAccept: varyOnAccept)
            if notModified { return .response(HTTPResponse(status: 304, headers: headers)) }
            CachedFile.addContentHeaders(&headers, mediaType: entry.mediaType, gzip: gzip != nil)
        } else {
            headers = gzip == nil ? entry.answerHeaders : entry.gzipAnswerHeaders
        }

        if let gzip {
            return complete(status: 200, headers: headers, body: gzip, isHEAD: isHEAD)
        }
        let status: Int
        let bytes: Range<Int>
        switch range {
        case .unsatisfiable:
            return .response(StaticErrorResponse.rangeNotSatisfiable(length: length))
        case .partial(let partial):
            status = 206
            bytes = partial
            headers.add("Content-Range", "bytes \(partial.lowerBound)-\(partial.upperBound - 1)/\(length)")
        case .whole:
            status = 200
            bytes = 0..<length
        }
        if let body = entry.body, body.count == length {
            // The whole body is handed over as is (copy-on-write shares the cached buffer).
            return complete(status: status, headers: headers,
                            body: bytes.count == length ? body : Array(body[bytes]), isHEAD: isHEAD)
        }
        if isHEAD {
            headers.add("Content-Length", "\(bytes.count)")
            return .response(HTTPResponse(status: status, headers: headers))
        }
        return .file(head: HTTPResponseHead(status: status, headers: headers), path: entry.realPath, range: bytes)
    }

    /// For HEAD the body is left out but `Content-Length` still tells its length (RFC 9110 §9.3.2).
    private func complete(status: Int, headers: HTTPHeaders, body: [UInt8], isHEAD: Bool) -> StaticAnswer {
        var headers = headers
        if isHEAD {
            headers.add("Content-Length", "\(body.count)")
            return .response(HTTPResponse(status: status, headers: headers))
        }
        return .response(HTTPResponse(status: status, headers: headers, body: body))
    }

    /// RFC 9110 §13.1.5: an entity tag must match strongly; a date must equal `Last-Modified` exactly.
    private func ifRangeHolds(_ value: String?, _ entry: CachedFile) -> Bool {
        guard let value = value?.trimmingASCIIWhitespace() else { return true }
        if value.hasPrefix("\"") || value.hasPrefix("W/") {
            return EntityTag.strongMatch(value, current: entry.entityTag)
        }
        guard let date = HTTPDate.parse(value) else { return false }
        return date == entry.lastModifiedSeconds
    }
}
