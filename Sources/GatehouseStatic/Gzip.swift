import CZlib

/// Why zlib could not compress a file (the file is then served uncompressed).
struct GzipError: Error, Equatable, Sendable {
    /// The zlib function that failed and its return code (`Z_*`).
    var function: String
    var code: Int32
}

/// One-shot gzip through the system zlib.
enum Gzip {
    /// Compresses `input` into a gzip member (RFC 1952). `deflateInit2` with windowBits 31 (15 + 16)
    /// selects the gzip wrapper instead of the zlib one; level 6 is zlib's default speed/size balance.
    static func compress(_ input: [UInt8], level: Int32 = 6) throws(GzipError) -> [UInt8] {
        var stream = z_stream()
        let initCode = deflateInit2_(&stream, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY,
                                     ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard initCode == Z_OK else { throw GzipError(function: "deflateInit2", code: initCode) }
        defer { deflateEnd(&stream) }

        // deflateBound is an upper bound for the whole output, so one Z_FINISH call always completes.
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        var input = input
        let result: Int32 = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = destination.baseAddress
                stream.avail_out = uInt(destination.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard result == Z_STREAM_END else { throw GzipError(function: "deflate", code: result) }
        output.removeLast(Int(stream.avail_out))
        return output
    }
}
