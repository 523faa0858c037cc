import Foundation
import Synchronization
import Testing
import TLSTransport

/// The HTTPS listener's certificate (`ServerCertificate`): files read at start and when they
/// change, refusals that name the file at fault, ticket periods, and the ACME placeholder.
@Suite("ServerCertificate")
struct ServerCertificateTests {
    /// A folder with certificate/key pairs made by the `openssl` command.
    struct Pairs {
        let directory: URL
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        static func make(_ names: [String]) async throws -> Pairs {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-servercert-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let pairs = Pairs(directory: directory)
            for (index, name) in names.enumerated() {
                let result = try await runTLSTestCommand("/usr/bin/env", [
                    "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "\(10 + index)", "-subj", "/CN=localhost",
                    "-keyout", pairs.path(name + ".key"), "-out", pairs.path(name + ".pem")])
                #expect(result.status == 0, "\(result.output)")
            }
            return pairs
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }

        /// Replaces `target` with `source`'s bytes the way deployment tools do: a rename.
        func replace(_ target: String, with source: String) throws {
            let temporary = path(target + ".new")
            try FileManager.default.copyItem(atPath: path(source), toPath: temporary)
            _ = rename(temporary, path(target))
        }
    }

    static func keys(_ period: Int64) -> [UInt8] {
        (0..<80).map { UInt8(truncatingIfNeeded: Int64($0) &+ period) }
    }

    @Test("the files are read at start; a key that is not the certificate's, or a file that is not PEM, names the file at fault")
    func startRefusals() async throws {
        let pairs = try await Pairs.make(["a", "b"])
        defer { pairs.remove() }
        let good = try ServerCertificate(files: .init(certificate: pairs.path("a.pem"), key: pairs.path("a.key")),
                                         ticketKeys: Self.keys, wallClock: { 1_000 })
        #expect(good.notAfter ?? 0 > Int64(Date().timeIntervalSince1970))
        #expect(good.context != nil)
        #expect(throws: TLSServerContextError.mismatch) {
            try ServerCertificate(files: .init(certificate: pairs.path("a.pem"), key: pairs.path("b.key")), ticketKeys: Self.keys, wallClock: { 0 })
        }
        #expect { try ServerCertificate(files: .init(certificate: pairs.path("a.key"), key: pairs.path("a.key")), ticketKeys: Self.keys, wallClock: { 0 }) }
            throws: { error in if case .certificate = error as? TLSServerContextError { return true } else { return false } }
        #expect { try ServerCertificate(files: .init(certificate: pairs.path("a.pem"), key: pairs.path("a.pem")), ticketKeys: Self.keys, wallClock: { 0 }) }
            throws: { error in if case .key = error as? TLSServerContextError { return true } else { return false } }
        #expect { try ServerCertificate(files: .init(certificate: pairs.path("missing.pem"), key: pairs.path("a.key")), ticketKeys: Self.keys, wallClock: { 0 }) }
            throws: { error in if case .certificate = error as? TLSServerContextError { return true } else { return false } }
    }

    @Test("replaced files serve from the next refresh; a replacement that cannot serve keeps the current certificate")
    func reload() async throws {
        let pairs = try await Pairs.make(["a", "b", "c"])
        defer { pairs.remove() }
        try pairs.replace("served.pem", with: "a.pem")
        try pairs.replace("served.key", with: "a.key")
        let certificate = try ServerCertificate(files: .init(certificate: pairs.path("served.pem"), key: pairs.path("served.key")),
                                                ticketKeys: Self.keys, wallClock: { 1_000 })
        let first = try #require(certificate.context)
        #expect(certificate.refresh() == .unchanged)
        #expect(certificate.context === first)

        try pairs.replace("served.key", with: "b.key")
        try pairs.replace("served.pem", with: "b.pem")
        #expect(certificate.refresh() == .reloaded)
        let second = try #require(certificate.context)
        #expect(second !== first)
        #expect(second.notAfter > first.notAfter)

        try pairs.replace("served.key", with: "c.key")  // c's key with b's certificate
        #expect(certificate.refresh() == .refused(.mismatch))
        #expect(certificate.context === second)
        #expect(certificate.refresh() == .unchanged, "a refused change is not retried until the files change again")
    }

    @Test("the ticket period turns on the wall clock: a new context with the same certificate")
    func ticketRotation() async throws {
        let pairs = try await Pairs.make(["a"])
        defer { pairs.remove() }
        let now = Mutex<Int64>(ServerCertificate.ticketPeriodSeconds * 5)
        let certificate = try ServerCertificate(files: .init(certificate: pairs.path("a.pem"), key: pairs.path("a.key")),
                                                ticketKeys: Self.keys, wallClock: { now.withLock { $0 } })
        let first = try #require(certificate.context)
        now.withLock { $0 += ServerCertificate.ticketPeriodSeconds - 1 }
        #expect(certificate.refresh() == .unchanged)
        now.withLock { $0 += 1 }
        #expect(certificate.refresh() == .rotated)
        let rotated = try #require(certificate.context)
        #expect(rotated !== first && rotated.notAfter == first.notAfter)
    }

    @Test("before ACME delivers: a placeholder context, no expiry; an installed chain is served and has one")
    func placeholderThenInstall() async throws {
        let pairs = try await Pairs.make(["a"])
        defer { pairs.remove() }
        let certificate = ServerCertificate(awaitingInstall: Self.keys, wallClock: { 1_000 }, placeholderName: "gatehouse.test")
        #expect(certificate.context != nil)
        #expect(certificate.notAfter == nil)
        let chain = Array(try Data(contentsOf: URL(fileURLWithPath: pairs.path("a.pem"))))
        let key = Array(try Data(contentsOf: URL(fileURLWithPath: pairs.path("a.key"))))
        #expect(throws: TLSServerContextError.self) { try certificate.install(certificatePEM: chain, keyPEM: Array("junk".utf8)) }
        #expect(certificate.notAfter == nil)
        try certificate.install(certificatePEM: chain, keyPEM: key)
        #expect(certificate.notAfter ?? 0 > 1_000)
    }

    @Test("tls-alpn-01: a challenge certificate carries the critical acmeIdentifier with the digest; publishing and withdrawing make new contexts")
    func alpnChallenge() async throws {
        let digest = (0..<32).map { UInt8($0) }
        let (cert, _) = try #require(TLSServerContext.selfSigned(name: "gatehouse.test", acmeDigest: digest))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-alpn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("challenge.pem").path
        try Data(cert).write(to: URL(fileURLWithPath: path))
        let shown = try await runTLSTestCommand("/usr/bin/env", ["openssl", "x509", "-in", path, "-noout", "-text"])
        #expect(shown.output.contains("1.3.6.1.5.5.7.1.31: critical"))
        #expect(shown.output.contains("DNS:gatehouse.test"))
        // Its value (a DER OCTET STRING of the digest) is what pebble checks in e2e/test_acme.py.

        let certificate = ServerCertificate(awaitingInstall: Self.keys, wallClock: { 1_000 }, placeholderName: "gatehouse.test")
        let before = try #require(certificate.context)
        try certificate.publishALPNChallenge(name: "Gatehouse.Test", keyAuthorizationDigest: digest)
        let during = try #require(certificate.context)
        #expect(during !== before && certificate.notAfter == nil)
        #expect(throws: TLSServerContextError.self) { try certificate.publishALPNChallenge(name: "x.test", keyAuthorizationDigest: [1]) }
        certificate.withdrawALPNChallenge(name: "gatehouse.test")
        #expect(certificate.context !== during)
    }

    @Test("a certificate request names every domain and comes with its own new key")
    func certificateRequest() async throws {
        let request = try #require(CertificateSigningRequest(names: ["gatehouse.test", "www.gatehouse.test"]))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-csr-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("req.der").path
        try Data(request.der).write(to: URL(fileURLWithPath: path))
        let shown = try await runTLSTestCommand("/usr/bin/env", ["openssl", "req", "-inform", "DER", "-in", path, "-noout", "-text", "-verify"])
        #expect(shown.status == 0)
        #expect(shown.output.contains("CN = gatehouse.test") || shown.output.contains("CN=gatehouse.test"))
        #expect(shown.output.contains("DNS:gatehouse.test, DNS:www.gatehouse.test"))
        #expect(String(decoding: request.keyPEM, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(CertificateSigningRequest(names: []) == nil)
    }
}
