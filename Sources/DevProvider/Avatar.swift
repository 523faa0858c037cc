import GatehouseEncoding

/// The development provider's profile pictures: a round badge with the user's initial, as a
/// `data:` SVG, so the demo shows a picture the way Google or Facebook users see theirs without
/// any request leaving the machine (the gateway's CSP allows `data:` and `https:` images).
enum Avatar {
    static func dataURL(for username: String) -> String {
        let initial = username.unicodeScalars.first { $0.properties.isAlphabetic || ("0"..."9").contains($0) }
            .map { String($0).uppercased() } ?? "?"
        // A colour from the name, stable across logins.
        var hash: UInt32 = 2_166_136_261
        for byte in username.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        let hue = hash % 360
        let svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">\
            <circle cx="32" cy="32" r="32" fill="hsl(\(hue),55%,45%)"/>\
            <text x="32" y="42" font-family="sans-serif" font-size="30" fill="#fff" text-anchor="middle">\
            \(TextEscaping.html(initial))</text></svg>
            """
        return "data:image/svg+xml;base64," + Base64.encode(Array(svg.utf8))
    }
}
