import HTTP1
import TestSupport
import Testing

/// One request message and what the parser plus `BodyFramingRules.request` must make of it.
struct RequestVector: Sendable, CustomTestStringConvertible {
    enum Expected: Sendable {
        case accepted(HTTPRequestHead, consumed: Int, framing: BodyFraming)
        /// Refused by the head parser or by the framing rules.
        case refused(HTTPParseError)
    }

    var name: String
    var bytes: [UInt8]
    var limits = HTTPParserLimits()
    var expected: Expected

    var testDescription: String { name }

    static func accept(_ name: String, _ bytes: [UInt8], method: String = "GET", target: String = "/",
                       version: HTTPVersion = .http1_1, headers: [(String, String)],
                       consumed: Int? = nil, framing: BodyFraming = .none,
                       limits: HTTPParserLimits = .init()) -> RequestVector {
        let head = HTTPRequestHead(method: method, target: target, version: version, headers: HTTPHeaders(headers))
        return RequestVector(name: name, bytes: bytes, limits: limits,
                             expected: .accepted(head, consumed: consumed ?? bytes.count, framing: framing))
    }

    static func accept(_ name: String, _ text: String, method: String = "GET", target: String = "/",
                       version: HTTPVersion = .http1_1, headers: [(String, String)],
                       consumed: Int? = nil, framing: BodyFraming = .none,
                       limits: HTTPParserLimits = .init()) -> RequestVector {
        accept(name, wire(text), method: method, target: target, version: version, headers: headers,
               consumed: consumed, framing: framing, limits: limits)
    }

    static func refuse(_ name: String, _ bytes: [UInt8], _ error: HTTPParseError,
                       limits: HTTPParserLimits = .init()) -> RequestVector {
        RequestVector(name: name, bytes: bytes, limits: limits, expected: .refused(error))
    }

    static func refuse(_ name: String, _ text: String, _ error: HTTPParseError,
                       limits: HTTPParserLimits = .init()) -> RequestVector {
        refuse(name, wire(text), error, limits: limits)
    }
}

let acceptedRequests: [RequestVector] = [
    .accept("simple GET", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", headers: [("Host", "example.com")]),
    .accept("{, |, }, ^ and \" in the query as browsers send them", "GET /a?q={\"x\"|^} HTTP/1.1\r\nHost: a\r\n\r\n",
            target: "/a?q={\"x\"|^}", headers: [("Host", "a")]),
    .accept("pipelined: consumed stops at the end of the first head",
            "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
            target: "/a", headers: [("Host", "a")], consumed: wire("GET /a HTTP/1.1\r\nHost: a\r\n\r\n").count),
    .accept("duplicates kept in arrival order, names keep their spelling (RFC 9110 §5.3)",
            "GET / HTTP/1.1\r\nHost: a\r\nAccept: x\r\nCookie: c=1\r\naccept: y\r\n\r\n",
            headers: [("Host", "a"), ("Accept", "x"), ("Cookie", "c=1"), ("accept", "y")]),
    .accept("leading empty lines ignored (RFC 9112 §2.2)", "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
            headers: [("Host", "a")]),
    .accept("four leading empty lines still ignored (RFC 9112 §2.2)",
            "\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", headers: [("Host", "a")]),
    .accept("OWS around values trimmed, inner whitespace kept (RFC 9112 §5.1)",
            "GET / HTTP/1.1\r\nHost: a\r\nX-A:  \t v a l \t \r\nX-B:\r\nX-C: \r\n\r\n",
            headers: [("Host", "a"), ("X-A", "v a l"), ("X-B", ""), ("X-C", "")]),
    .accept("HTTP/1.0 may omit Host (RFC 9112 §3.2)", "GET /old HTTP/1.0\r\n\r\n",
            target: "/old", version: .http1_0, headers: []),
    .accept("OPTIONS * asterisk-form (RFC 9112 §3.2.4)", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
            method: "OPTIONS", target: "*", headers: [("Host", "a")]),
    .accept("target keeps query and percent-encoding as sent",
            "GET /p/a%20b?q=1&r=%2F;x=[y]~ HTTP/1.1\r\nHost: a\r\n\r\n",
            target: "/p/a%20b?q=1&r=%2F;x=[y]~", headers: [("Host", "a")]),
    .accept("extension method is a token (RFC 9110 §9.1)", "M-SEARCH.x_y! / HTTP/1.1\r\nHost: a\r\n\r\n",
            method: "M-SEARCH.x_y!", headers: [("Host", "a")]),
    .accept("obs-text value read as ISO-8859-1 (RFC 9110 §5.5)",
            wire("GET / HTTP/1.1\r\nHost: a\r\nX: caf") + [0xE9, 0xFF] + wire("\r\n\r\n"),
            headers: [("Host", "a"), ("X", "café\u{FF}")]),
    .accept("UTF-8 value decoded as UTF-8",
            wire("GET / HTTP/1.1\r\nHost: a\r\nX: caf") + [0xC3, 0xA9] + wire("\r\n\r\n"),
            headers: [("Host", "a"), ("X", "café")]),
    .accept("Content-Length body is not part of the head (RFC 9112 §6.2)",
            "POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
            method: "POST", target: "/f", headers: [("Host", "a"), ("Content-Length", "5")],
            consumed: wire("POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n").count, framing: .contentLength(5)),
    .accept("identical Content-Length values accepted (RFC 9110 §8.6)",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\ncontent-length: 005\r\n\r\n",
            method: "POST", headers: [("Host", "a"), ("Content-Length", "5, 5"), ("content-length", "005")],
            framing: .contentLength(5)),
    .accept("Content-Length 0 kept as declared", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
            method: "POST", headers: [("Host", "a"), ("Content-Length", "0")], framing: .contentLength(0)),
    .accept("Content-Length of 2^53 is the largest accepted",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9007199254740992\r\n\r\n",
            method: "POST", headers: [("Host", "a"), ("Content-Length", "9007199254740992")],
            framing: .contentLength(9_007_199_254_740_992)),
    .accept("chunked is case-insensitive (RFC 9112 §7)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ChUnKeD\r\n\r\n",
            method: "POST", headers: [("Host", "a"), ("Transfer-Encoding", "ChUnKeD")], framing: .chunked),
    .accept("empty Transfer-Encoding list elements ignored (RFC 9110 §5.6.1)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , chunked ,\r\n\r\n",
            method: "POST", headers: [("Host", "a"), ("Transfer-Encoding", ", chunked ,")], framing: .chunked),
    .accept("Host with IPv6 literal and port (RFC 3986 §3.2.2)", "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
            headers: [("Host", "[::1]:8080")]),
    .accept("head of exactly maxHeadBytes accepted", "GET / HTTP/1.1\r\nHost: abcdefghij\r\n\r\n",
            headers: [("Host", "abcdefghij")], limits: HTTPParserLimits(maxHeadBytes: 36)),
    .accept("exactly maxHeaderCount fields accepted", "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n\r\n",
            headers: [("Host", "a"), ("X", "1")], limits: HTTPParserLimits(maxHeaderCount: 2)),
]

let refusedRequests: [RequestVector] = [
    // Request line (RFC 9112 §3).
    .refuse("method with a non-tchar byte (RFC 9110 §9.1)", "G@T / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod),
    .refuse("NUL in method (RFC 9110 §9.1)", wire("G") + [0] + wire("T / HTTP/1.1\r\nHost: a\r\n\r\n"), .invalidMethod),
    .refuse("request line starting with SP (RFC 9112 §3)", " GET / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod),
    .refuse("HTAB instead of SP after method (RFC 9112 §3)", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod),
    .refuse("HTTP/0.9 simple request (RFC 9112 §3)", "GET /\r\n\r\n", .invalidRequestLine),
    .refuse("request line with only a method (RFC 9112 §3)", "GET\r\nHost: a\r\n\r\n", .invalidRequestLine),
    .refuse("double SP after method (RFC 9112 §3)", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidRequestLine),
    .refuse("double SP before version (RFC 9112 §3)", "GET /  HTTP/1.1\r\nHost: a\r\n\r\n", .invalidRequestLine),
    .refuse("more than four leading empty lines (RFC 9112 §2.2)",
            "\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", .tooManyLeadingEmptyLines),

    // Request target (RFC 9112 §3.2).
    .refuse("absolute-form refused by a gateway (RFC 9112 §3.2.2)",
            "GET http://evil.example/ HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("authority-form refused (RFC 9112 §3.2.3)", "CONNECT evil.example:443 HTTP/1.1\r\nHost: a\r\n\r\n",
            .invalidTarget),
    .refuse("asterisk-form only for OPTIONS (RFC 9112 §3.2.4)", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("SP inside target (RFC 9112 §3.2)", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("DEL in target (RFC 9112 §3.2)", wire("GET /a") + [0x7F] + wire(" HTTP/1.1\r\nHost: a\r\n\r\n"), .invalidTarget),
    .refuse("control byte in target (RFC 9112 §3.2)", wire("GET /a") + [0x01] + wire(" HTTP/1.1\r\nHost: a\r\n\r\n"),
            .invalidTarget),
    .refuse("non-ASCII byte in target (RFC 9112 §3.2)",
            wire("GET /caf") + [0xC3, 0xA9] + wire(" HTTP/1.1\r\nHost: a\r\n\r\n"), .invalidTarget),
    .refuse("HTAB in target (RFC 9112 §3.2)", "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    // A byte RFC 3986 §3.3 leaves out of a path: an upstream reading `/api/x/..#` as a URI
    // reference would climb out of the route's prefix (issue #38, found by an outside review).
    .refuse("raw # in the path (RFC 3986 §3.3)", "GET /api/public/..# HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw # after the query (RFC 3986 §3.5: never sent)", "GET /a?b#c HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw \" in the path (RFC 3986 §3.3)", "GET /a\"b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw < in the path (RFC 3986 §3.3)", "GET /a<b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw > in the path (RFC 3986 §3.3)", "GET /a>b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw \\ in the path (RFC 3986 §3.3)", "GET /a\\b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw ^ in the path (RFC 3986 §3.3)", "GET /a^b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw ` in the path (RFC 3986 §3.3)", "GET /a`b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw { in the path (RFC 3986 §3.3)", "GET /a{b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw | in the path (RFC 3986 §3.3)", "GET /a|b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
    .refuse("raw } in the path (RFC 3986 §3.3)", "GET /a}b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),

    // Version (RFC 9112 §2.3).
    .refuse("lowercase HTTP-name (RFC 9112 §2.3)", "GET / http/1.1\r\nHost: a\r\n\r\n", .invalidVersion),
    .refuse("version without minor (RFC 9112 §2.3)", "GET / HTTP/1\r\nHost: a\r\n\r\n", .invalidVersion),
    .refuse("two-digit minor version (RFC 9112 §2.3)", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", .invalidVersion),
    .refuse("trailing SP after version (RFC 9112 §3)", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", .invalidVersion),
    .refuse("HTTP/2.0 is answered 505 (RFC 9110 §15.6.6)", "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
            .unsupportedVersion(major: 2, minor: 0)),
    .refuse("HTTP/1.2 is answered 505 (RFC 9110 §15.6.6)", "GET / HTTP/1.2\r\nHost: a\r\n\r\n",
            .unsupportedVersion(major: 1, minor: 2)),
    .refuse("HTTP/0.9 version is answered 505 (RFC 9110 §15.6.6)", "GET / HTTP/0.9\r\n\r\n",
            .unsupportedVersion(major: 0, minor: 9)),

    // Line structure (RFC 9112 §2.2).
    .refuse("bare LF ends the request line (RFC 9112 §2.2)", "GET / HTTP/1.1\nHost: a\r\n\r\n", .bareLF(offset: 14)),
    .refuse("bare LF ends a field line (RFC 9112 §2.2)", "GET / HTTP/1.1\r\nHost: a\n\r\n", .bareLF(offset: 23)),
    .refuse("bare LF as the empty line (RFC 9112 §2.2)", "GET / HTTP/1.1\r\nHost: a\r\n\n", .bareLF(offset: 25)),
    .refuse("bare LF as a leading empty line (RFC 9112 §2.2)", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", .bareLF(offset: 0)),
    .refuse("bare CR inside a line (RFC 9112 §2.2)", "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", .bareCR(offset: 23)),
    .refuse("bare CR ends the request line (RFC 9112 §2.2)", "GET / HTTP/1.1\rHost: a\r\n\r\n", .bareCR(offset: 14)),
    .refuse("CR CR LF (RFC 9112 §2.2)", "GET / HTTP/1.1\r\r\nHost: a\r\n\r\n", .bareCR(offset: 14)),

    // Field lines (RFC 9112 §5).
    .refuse("obs-fold continuation line (RFC 9112 §5.2)", "GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n",
            .obsoleteLineFolding(line: 4)),
    .refuse("HTAB obs-fold (RFC 9112 §5.2)", "GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n\tc\r\n\r\n",
            .obsoleteLineFolding(line: 4)),
    .refuse("whitespace between start line and first field (RFC 9112 §2.2)",
            "GET / HTTP/1.1\r\n Host: a\r\n\r\n", .obsoleteLineFolding(line: 2)),
    .refuse("SP before colon (RFC 9112 §5.1)", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", .whitespaceBeforeColon(line: 2)),
    .refuse("HTAB before colon (RFC 9112 §5.1)", "GET / HTTP/1.1\r\nHost: a\r\nX\t: b\r\n\r\n",
            .whitespaceBeforeColon(line: 3)),
    .refuse("field line without colon (RFC 9112 §5)", "GET / HTTP/1.1\r\nHost: a\r\nNoColonHere\r\n\r\n",
            .missingColon(line: 3)),
    .refuse("empty field name (RFC 9110 §5.1)", "GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", .invalidFieldName(line: 3)),
    .refuse("non-tchar in field name (RFC 9110 §5.1)", "GET / HTTP/1.1\r\nHost: a\r\nX(Y): b\r\n\r\n",
            .invalidFieldName(line: 3)),
    .refuse("SP inside field name (RFC 9110 §5.1)", "GET / HTTP/1.1\r\nHost: a\r\nX Y: b\r\n\r\n",
            .invalidFieldName(line: 3)),
    .refuse("non-ASCII field name (RFC 9110 §5.1)", wire("GET / HTTP/1.1\r\nHost: a\r\nX") + [0xC3, 0xA9]
                + wire(": b\r\n\r\n"), .invalidFieldName(line: 3)),
    .refuse("NUL in field value (RFC 9110 §5.5)", wire("GET / HTTP/1.1\r\nHost: a\r\nX: a") + [0] + wire("b\r\n\r\n"),
            .invalidFieldValue(name: "X")),
    .refuse("control byte in field value (RFC 9110 §5.5)",
            wire("GET / HTTP/1.1\r\nHost: a\r\nX-Ctl: a") + [0x1B] + wire("b\r\n\r\n"), .invalidFieldValue(name: "X-Ctl")),
    .refuse("DEL in field value (RFC 9110 §5.5)", wire("GET / HTTP/1.1\r\nHost: a\r\nX: a") + [0x7F] + wire("\r\n\r\n"),
            .invalidFieldValue(name: "X")),

    // Limits.
    .refuse("head over maxHeadBytes answered 431 (RFC 6585 §5)", "GET / HTTP/1.1\r\nHost: abcdefghijk\r\n\r\n",
            .headTooLarge(limit: 36), limits: HTTPParserLimits(maxHeadBytes: 36)),
    .refuse("more than maxHeaderCount fields answered 431 (RFC 6585 §5)",
            "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nY: 2\r\n\r\n", .tooManyHeaders(limit: 2),
            limits: HTTPParserLimits(maxHeaderCount: 2)),

    // Host (RFC 9112 §3.2).
    .refuse("HTTP/1.1 without Host (RFC 9112 §3.2)", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", .missingHost),
    .refuse("two Host fields (RFC 9112 §3.2)", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", .multipleHost),
    .refuse("two Host fields in HTTP/1.0 (RFC 9112 §3.2)", "GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", .multipleHost),
    .refuse("Host with a path (RFC 9112 §3.2)", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", .invalidHost),
    .refuse("Host with SP (RFC 9112 §3.2)", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", .invalidHost),
    .refuse("empty Host (RFC 9112 §3.2)", "GET / HTTP/1.1\r\nHost: \r\n\r\n", .invalidHost),
    .refuse("Host with a non-numeric port (RFC 9112 §3.2)", "GET / HTTP/1.1\r\nHost: a:80x\r\n\r\n", .invalidHost),
    .refuse("Host with userinfo (RFC 9112 §3.2)", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", .invalidHost),

    // Body framing (RFC 9112 §6).
    .refuse("Content-Length with Transfer-Encoding (RFC 9112 §6.1)",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
            .contentLengthWithTransferEncoding),
    .refuse("two differing Content-Length fields (RFC 9112 §6.3)",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", .conflictingContentLength),
    .refuse("differing Content-Length list (RFC 9112 §6.3)",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n", .conflictingContentLength),
    .refuse("signed Content-Length (RFC 9110 §8.6)", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n",
            .invalidContentLength),
    .refuse("negative Content-Length (RFC 9110 §8.6)", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
            .invalidContentLength),
    .refuse("hex Content-Length (RFC 9110 §8.6)", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n",
            .invalidContentLength),
    .refuse("SP inside Content-Length (RFC 9110 §8.6)", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n",
            .invalidContentLength),
    .refuse("empty Content-Length (RFC 9110 §8.6)", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n",
            .invalidContentLength),
    .refuse("empty element in Content-Length list (RFC 9110 §8.6)",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,\r\n\r\n", .invalidContentLength),
    .refuse("Content-Length above 2^53 (RFC 9110 §8.6)",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9007199254740993\r\n\r\n", .invalidContentLength),
    .refuse("Content-Length overflowing Int64 (RFC 9110 §8.6)",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", .invalidContentLength),
    .refuse("Transfer-Encoding in HTTP/1.0 (RFC 9112 §6.1)",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", .transferEncodingInHTTP10),
    .refuse("Transfer-Encoding without chunked (RFC 9112 §6.3 item 4)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", .chunkedNotFinal),
    .refuse("chunked not the final coding (RFC 9112 §6.3 item 4)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", .chunkedNotFinal),
    .refuse("chunked not final across two fields (RFC 9112 §6.3 item 4)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n",
            .chunkedNotFinal),
    .refuse("unknown coding before chunked answered 501 (RFC 9112 §6.1)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            .unsupportedTransferEncoding(coding: "gzip")),
    .refuse("chunked applied twice (RFC 9112 §7)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", .invalidTransferEncoding),
    .refuse("parameters on chunked (RFC 9112 §7)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", .invalidTransferEncoding),
    .refuse("empty Transfer-Encoding (RFC 9112 §6.1)", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n",
            .invalidTransferEncoding),
    .refuse("non-token coding (RFC 9112 §6.1)",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", .invalidTransferEncoding),
]
