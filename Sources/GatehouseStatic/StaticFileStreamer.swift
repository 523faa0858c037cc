#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTP1
import HTTPServer

/// Streams a large file (a `StaticAnswer.file`) to the client in 64 KiB pieces.
///
/// Each piece is read with `pread` and written with `writeBody`, which waits while the client is
/// slower than the disk: a download holds one piece in memory, never the file.
public enum StaticFileStreamer {
    public static let pieceSize = 64 * 1024

    /// Sends `head` with `Content-Length: range.count`, then the bytes of `range` (nothing for HEAD).
    ///
    /// If the file cannot be opened before anything was sent, the client gets a `500` JSON error. If it
    /// fails or shrinks midway, the exchange is aborted: a truncated download is detectable, a padded
    /// or mixed one is not.
    public static func stream(path: String, range: Range<Int>, head: HTTPResponseHead, isHEAD: Bool,
                              to writer: any HTTPResponseWriter) async {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            await writer.respond(StaticErrorResponse.unreadable())
            return
        }
        defer { close(fd) }
        do {
            try await writer.writeHead(head, contentLength: range.count)
            if !isHEAD {
                var offset = range.lowerBound
                var piece = [UInt8](repeating: 0, count: pieceSize)
                while offset < range.upperBound {
                    let wanted = min(pieceSize, range.upperBound - offset)
                    let count = piece.withUnsafeMutableBytes { buffer in
                        pread(fd, buffer.baseAddress, wanted, off_t(offset))
                    }
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else {
                        writer.abort()
                        return
                    }
                    try await writer.writeBody(Array(piece[..<count]))
                    offset += count
                }
            }
            try await writer.finish()
        } catch {
            writer.abort()
        }
    }
}
