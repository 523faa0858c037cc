import Foundation
import Testing

/// Release builds (the Dockerfile, bench/run) place the functions a running gateway executes in one
/// stretch of the binary: Package.swift's `linkOrder` hands lld Sources/GatehouseCLI/gatehouse.order,
/// recorded by bench/linkorder/record. The test run builds for debug only, so these tests check what
/// that link depends on: the order file is there and is a list of symbol names lld can use, it
/// names the gateway's hot path, and Package.swift applies it (and the other release link flags)
/// to release builds only.
@Suite("Release link shape")
struct ReleaseLinkShapeTests {
    let root = DockerfileShapeTests.repositoryRoot()

    func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("The order file is a list of distinct symbol names, as lld reads it")
    func orderFileIsSymbolList() throws {
        let names = try text("Sources/GatehouseCLI/gatehouse.order").split(separator: "\n").map(String.init)
        #expect(names.count > 1_000)
        #expect(Set(names).count == names.count, "a name listed twice")
        let malformed = names.filter { name in
            name.isEmpty || name.contains(where: \.isWhitespace) || name.hasPrefix("0x") || name.contains("'")
        }
        #expect(malformed.isEmpty, "not symbol names: \(malformed.prefix(5))")
    }

    @Test("The order file names the code every request runs")
    func orderFileCoversHotPath() throws {
        let names = try text("Sources/GatehouseCLI/gatehouse.order").split(separator: "\n")
        // Mangled module prefixes: the server, the HTTP codec, the event loops, the gateway (proxy,
        // sessions, static files) and the Swift runtime's reference counting.
        for prefix in ["$s10HTTPServer", "$s5HTTP1", "$s10EventLoops", "$s9Gatehouse", "$s15GatehouseStatic",
                       "swift_retain", "swift_release"] {
            #expect(names.contains { $0.hasPrefix(prefix) }, "nothing of \(prefix) in the order")
        }
    }

    @Test("Package.swift links release builds with lld and the order file, debug builds as before")
    func packageAppliesOrderToReleaseOnly() throws {
        let manifest = try text("Package.swift")
        let flags = ["-use-ld=lld",
                     "--symbol-ordering-file=\\(Context.packageDirectory)/Sources/GatehouseCLI/gatehouse.order",
                     "pack-relative-relocs", "--no-export-dynamic", "-function-sections"]
        for flag in flags {
            #expect(manifest.contains(flag), "Package.swift lacks \(flag)")
        }
        // Every unsafe flag list ends in the release condition.
        let unsafeLists = manifest.components(separatedBy: ".unsafeFlags(").count - 1
        let releaseOnly = manifest.components(separatedBy: ".when(configuration: .release))").count - 1
        #expect(unsafeLists == 2)
        #expect(releaseOnly == unsafeLists, "an unsafeFlags list that applies to debug builds too")
        #expect(manifest.contains("exclude: [\"gatehouse.order\"]"), "the order file would be an unhandled source")
    }
}
