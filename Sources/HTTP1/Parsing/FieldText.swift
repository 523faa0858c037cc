import CByteScan

/// Turns validated head bytes into Strings.
enum FieldText {
    /// ASCII bytes (tokens, targets, names) that were already checked to be visible ASCII.
    static func ascii(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
