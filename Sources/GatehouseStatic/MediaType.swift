/// The `Content-Type` of a file, chosen by its extension, and whether gzip helps it.
///
/// Browsers are told `X-Content-Type-Options: nosniff` by the gateway, so a wrong type here breaks the
/// page (a script served as `application/octet-stream` does not run): the table is deliberately
/// explicit rather than guessed from content.
struct MediaType: Equatable, Sendable {
    var contentType: String
    /// Text-like formats that shrink under deflate. Images, fonts, archives and PDFs are already
    /// compressed: gzipping them costs CPU for nothing.
    var compressible: Bool
    var isHTML: Bool = false

    static let octetStream = MediaType(contentType: "application/octet-stream", compressible: false)

    static func forFile(named name: String) -> MediaType {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return .octetStream }
        let ext = name[name.index(after: dot)...].lowercased()
        return table[ext] ?? .octetStream
    }

    private static func text(_ type: String) -> MediaType {
        MediaType(contentType: "\(type); charset=utf-8", compressible: true)
    }

    private static let table: [String: MediaType] = [
        "html": MediaType(contentType: "text/html; charset=utf-8", compressible: true, isHTML: true),
        "htm": MediaType(contentType: "text/html; charset=utf-8", compressible: true, isHTML: true),
        "css": text("text/css"),
        "js": text("text/javascript"),
        "mjs": text("text/javascript"),
        "txt": text("text/plain"),
        "csv": text("text/csv"),
        "md": text("text/markdown"),
        "json": MediaType(contentType: "application/json", compressible: true),
        "map": MediaType(contentType: "application/json", compressible: true),
        "webmanifest": MediaType(contentType: "application/manifest+json", compressible: true),
        "xml": MediaType(contentType: "application/xml", compressible: true),
        "svg": MediaType(contentType: "image/svg+xml", compressible: true),
        "wasm": MediaType(contentType: "application/wasm", compressible: true),
        "png": MediaType(contentType: "image/png", compressible: false),
        "jpg": MediaType(contentType: "image/jpeg", compressible: false),
        "jpeg": MediaType(contentType: "image/jpeg", compressible: false),
        "gif": MediaType(contentType: "image/gif", compressible: false),
        "webp": MediaType(contentType: "image/webp", compressible: false),
        "avif": MediaType(contentType: "image/avif", compressible: false),
        "ico": MediaType(contentType: "image/x-icon", compressible: false),
        "woff": MediaType(contentType: "font/woff", compressible: false),
        "woff2": MediaType(contentType: "font/woff2", compressible: false),
        "ttf": MediaType(contentType: "font/ttf", compressible: false),
        "otf": MediaType(contentType: "font/otf", compressible: false),
        "pdf": MediaType(contentType: "application/pdf", compressible: false),
        "mp4": MediaType(contentType: "video/mp4", compressible: false),
        "webm": MediaType(contentType: "video/webm", compressible: false),
        "mp3": MediaType(contentType: "audio/mpeg", compressible: false),
        "zip": MediaType(contentType: "application/zip", compressible: false),
        "gz": MediaType(contentType: "application/gzip", compressible: false),
    ]
}
