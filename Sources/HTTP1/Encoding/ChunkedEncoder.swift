/// Frames body pieces in the chunked transfer coding (RFC 9112 §7.1).
///
/// For example: `write(ChunkedEncoder.chunkHeader(piece.count)); write(piece); write(ChunkedEncoder.chunkEnd)`,
/// then `write(ChunkedEncoder.lastChunk)` once.
public enum ChunkedEncoder {
    /// `HEX(size) CRLF`, the line before `size` bytes of chunk data. A chunk of 0 bytes would be read
    /// as the last chunk, so for `size <= 0` this returns no bytes: skip empty pieces entirely
    /// (``encodeChunk(_:)`` does).
    public static func chunkHeader(_ size: Int) -> [UInt8] {
        guard size > 0 else { return [] }
        var bytes = Array(String(size, radix: 16).utf8)
        bytes.append(ASCII.cr)
        bytes.append(ASCII.lf)
        return bytes
    }

    /// The CRLF that follows each chunk's data.
    public static let chunkEnd: [UInt8] = ASCII.crlf

    /// `0 CRLF CRLF`: the last chunk with an empty trailer section, ending the body.
    public static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    /// One whole chunk (header, data, CRLF); empty for an empty piece.
    public static func encodeChunk(_ data: some Collection<UInt8>) -> [UInt8] {
        guard !data.isEmpty else { return [] }
        var bytes = chunkHeader(data.count)
        bytes.reserveCapacity(bytes.count + data.count + 2)
        bytes.append(contentsOf: data)
        bytes.append(contentsOf: chunkEnd)
        return bytes
    }
}
