import HTTP1
import Synchronization

/// The gzip representation of a cached file, made the first time a client accepts it.
enum GzipVariant: Sendable, Equatable {
    /// Not a compressible type, too small to gain, or too large to compress in one go.
    case notApplicable
    case notYetCompressed
    case compressed([UInt8])
    /// Compression did not make it smaller (or zlib failed): the identity bytes are served.
    case notSmaller
}

/// One file as last seen on disk, with everything its answers need.
struct CachedFile: Sendable {
    var identity: FileIdentity
    /// Canonical path, checked to lie inside the root.
    var realPath: String
    let mediaType: MediaType
    let entityTag: String
    /// The entity tag of the gzip variant (RFC 9110 §8.8.3: a different representation).
    let gzipEntityTag: String
    let lastModified: String
    var lastModifiedSeconds: Int64
    let cacheControl: String
    /// The bytes of small files; nil for files streamed from disk.
    var body: [UInt8]?
    var gzip: GzipVariant
    /// The headers of the usual answer, a `200` with the whole file, as is and gzipped: made once
    /// here instead of field by field on every request (hence the fields they repeat are `let`).
    let answerHeaders: HTTPHeaders
    let gzipAnswerHeaders: HTTPHeaders

    var mayVaryByEncoding: Bool { gzip != .notApplicable }

    init(identity: FileIdentity, realPath: String, mediaType: MediaType, entityTag: String, lastModified: String,
         lastModifiedSeconds: Int64, cacheControl: String, body: [UInt8]?, gzip: GzipVariant) {
        self.identity = identity
        self.realPath = realPath
        self.mediaType = mediaType
        self.entityTag = entityTag
        self.gzipEntityTag = EntityTag.gzipVariant(of: entityTag)
        self.lastModified = lastModified
        self.lastModifiedSeconds = lastModifiedSeconds
        self.cacheControl = cacheControl
        self.body = body
        self.gzip = gzip
        let mayVary = gzip != .notApplicable
        var plain = Self.validatorHeaders(entityTag: entityTag, lastModified: lastModified, cacheControl: cacheControl,
                                          varyOnEncoding: mayVary, varyOnAccept: false)
        Self.addContentHeaders(&plain, mediaType: mediaType, gzip: false)
        plain.checkAll()
        answerHeaders = plain
        var gzipped = Self.validatorHeaders(entityTag: gzipEntityTag, lastModified: lastModified, cacheControl: cacheControl,
                                            varyOnEncoding: mayVary, varyOnAccept: false)
        Self.addContentHeaders(&gzipped, mediaType: mediaType, gzip: true)
        gzipped.checkAll()
        gzipAnswerHeaders = gzipped
    }

    /// `ETag`, `Last-Modified`, `Cache-Control` and `Vary`: what a `304` repeats (RFC 9110 §15.4.5).
    static func validatorHeaders(entityTag: String, lastModified: String, cacheControl: String,
                                 varyOnEncoding: Bool, varyOnAccept: Bool) -> HTTPHeaders {
        var headers = HTTPHeaders(minimumCapacity: 8)
        headers.add("ETag", entityTag)
        headers.add("Last-Modified", lastModified)
        headers.add("Cache-Control", cacheControl)
        switch (varyOnEncoding, varyOnAccept) {
        case (true, true): headers.add("Vary", "Accept-Encoding, Accept")
        case (true, false): headers.add("Vary", "Accept-Encoding")
        case (false, true): headers.add("Vary", "Accept")
        case (false, false): break
        }
        return headers
    }

    /// What a `200`/`206` adds to the validators.
    static func addContentHeaders(_ headers: inout HTTPHeaders, mediaType: MediaType, gzip: Bool) {
        headers.add("Content-Type", mediaType.contentType)
        headers.add("Accept-Ranges", "bytes")
        if gzip { headers.add("Content-Encoding", "gzip") }
    }
}

/// Files by the path that was looked up (after `index.html` resolution).
///
/// Entries are never trusted blindly: every request `stat`s the path and uses the entry only when
/// device, inode, size and modification time are unchanged, so a deployment is picked up at once
/// without a restart. The cache holds only files that exist inside the root, so its size is bounded by
/// the folder, and a byte budget keeps a large folder from pinning unbounded memory.
final class FileCache: Sendable {
    private struct State {
        var entries: [String: CachedFile] = [:]
        var bytes = 0
    }

    private let state = Mutex(State())
    private let budget: Int

    init(budget: Int) { self.budget = budget }

    func entry(for path: String, matching identity: FileIdentity) -> CachedFile? {
        state.withLock { state in
            guard let entry = state.entries[path], entry.identity == identity else { return nil }
            return entry
        }
    }

    func store(_ entry: CachedFile, for path: String) {
        let size = Self.weight(entry)
        guard size <= budget else { return }
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: path) { state.bytes -= Self.weight(old) }
            // Simple eviction: when the budget is exceeded, drop arbitrary entries. The hot files come
            // back on their next request; no per-hit bookkeeping is paid on the fast path.
            while state.bytes + size > budget, let victim = state.entries.first {
                state.entries.removeValue(forKey: victim.key)
                state.bytes -= Self.weight(victim.value)
            }
            state.entries[path] = entry
            state.bytes += size
        }
    }

    /// Records the gzip variant, unless the file changed since the entry was made.
    func storeGzip(_ variant: GzipVariant, for path: String, identity: FileIdentity) {
        state.withLock { state in
            guard var entry = state.entries[path], entry.identity == identity else { return }
            state.bytes -= Self.weight(entry)
            entry.gzip = variant
            state.entries[path] = entry
            state.bytes += Self.weight(entry)
        }
    }

    private static func weight(_ entry: CachedFile) -> Int {
        var total = entry.body?.count ?? 0
        if case .compressed(let bytes) = entry.gzip { total += bytes.count }
        return total + 256
    }
}
