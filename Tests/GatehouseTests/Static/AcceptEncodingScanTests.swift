import HTTP1
import TestSupport
import Testing
@testable import GatehouseStatic

/// `ContentNegotiation.acceptsGzip` reads `Accept-Encoding` bytes in place. These tests hold it to
/// the answer of the plain reading — split into elements, `;` pieces and `name=value` parameters,
/// lowercased, q-values parsed — that it replaced (`weightedTokens`, still used for `Accept`).
@Suite("Static files: Accept-Encoding read in place")
struct AcceptEncodingScanTests {
    /// The replaced reading, kept here as the reference.
    static func reference(_ values: [String]) -> Bool {
        var gzip: Double?
        var wildcard: Double?
        for (coding, q) in ContentNegotiation.weightedTokens(values) {
            switch coding {
            case "gzip", "x-gzip": gzip = max(gzip ?? 0, q)
            case "*": wildcard = max(wildcard ?? 0, q)
            default: continue
            }
        }
        if let gzip { return gzip > 0 }
        return (wildcard ?? 0) > 0
    }

    static func headers(_ values: [String]) -> HTTPHeaders {
        HTTPHeaders(values.map { ("Accept-Encoding", $0) } + [("Accept", "text/html")])
    }

    @Test("Edge cases of the grammar give the reference's answer", arguments: [
        ";gzip", "gzip;;q=0", "gzip;q=", "gzip;=q=0", "gzip;==q=0", "gzip;q==0", "gzip; Q = 0 ", "gzip;q=1.",
        "gzip;q=.5", "gzip;q=1.001", "gzip;q=0.0001", "gzip;q=00000", "gzip;q=1;q=0", "gzip;q=0;q=1",
        " ,gzip", ",,,", "x-GZIP;q=0.1", "*;q=0.5, gzip;q=0", "gzip ;q=0", "\tgzip\t", "gzipx", "gzi",
        "*x", "**", "q=1", "gzip;a=1;q=0.2", "gzip;a", "gzip;q", "*;q=0, x-gzip", "br;q=0, *",
        "gzip;q=-0", "gzip;q=1e0", "gzip;q=0x1", "gzip, gzip;q=0", "gzip;q=0, gzip",
    ])
    func edgeCase(value: String) {
        #expect(ContentNegotiation.acceptsGzip(Self.headers([value])) == Self.reference([value]), "\(value)")
    }

    @Test("Several fields are read together, as one list")
    func severalFields() {
        for values in [["gzip;q=0", "*"], ["br", "x-gzip"], ["*;q=0", "gzip;q=0.1"], ["identity", ""], []] {
            #expect(ContentNegotiation.acceptsGzip(Self.headers(values)) == Self.reference(values), "\(values)")
        }
    }

    @Test("Random values over the grammar's characters give the reference's answer")
    func randomValues() {
        let alphabet: [String] = ["g", "z", "i", "p", "G", "Z", "I", "P", "x", "-", "*", ";", ",", "=", "q", "Q",
                                  "0", "1", ".", "5", " ", "\t", "b", "r", "é", "gzip", "x-gzip", "q=0", "q=1"]
        var generator = SplitMix64(seed: 0x5eed_ac_ce_97)
        for _ in 0..<20_000 {
            let fields = Int.random(in: 1...2, using: &generator)
            let values = (0..<fields).map { _ in
                (0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
            }
            #expect(ContentNegotiation.acceptsGzip(Self.headers(values)) == Self.reference(values), "\(values)")
        }
    }
}
