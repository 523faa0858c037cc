// swift-tools-version:6.1
import PackageDescription

// Targets follow ARCHITECTURE.md: each module has one concern and dependencies point inward.
// None of them may pull SwiftNIO into the graph (`swift package show-dependencies`).
let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    // Async functions run on their caller's executor instead of hopping to the generic one: on the
    // proxy path every such hop consulted the task's executor preference (about 5 % of its CPU).
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
    // Each function in its own section (Swift does this only for public ones), so that the release
    // link can place the code a running gateway executes next to each other (`linkOrder`).
    .unsafeFlags(["-Xfrontend", "-function-sections"], .when(configuration: .release)),
]

// Release links with lld: the functions listed in Sources/GatehouseCLI/gatehouse.order (what
// `serve` runs from start through logins, proxied calls and static files, recorded by
// bench/linkorder/record) come first, in one stretch, instead of spread over 15 MB of code; the kernel
// maps code in 64 KiB windows, so scattered code kept ~9 MiB of the binary resident at idle.
// Relative relocations are packed (DT_RELR, glibc 2.36) instead of 1.4 MB of `.rela.dyn` read at
// every start. Debug builds (the tests) link as before.
let linkOrder: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld",
                  "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/GatehouseCLI/gatehouse.order",
                  "-Xlinker", "--no-warn-symbol-ordering",
                  "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                  // Swift's static-stdlib link exports every symbol of ours (`-export-dynamic`): a
                  // 1.5 MB dynamic symbol table the loader reads at start. Nothing looks them up.
                  "-Xlinker", "--no-export-dynamic"],
                 .when(configuration: .release)),
]

let package = Package(
    name: "Gatehouse",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "gatehouse", targets: ["gatehouse"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        // OpenSSL 3 (Debian libssl-dev): TLS for provider calls, `https://` upstreams and `wss://`
        // tunnels, driven by the event loops (`HTTPClient/TLS`).
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL"),
        // libpq (Debian libpq-dev) for sessions in PostgreSQL.
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ"),
        // The byte-class scans of HTTP heads, in C so that they vectorise (header only).
        .systemLibrary(name: "CByteScan", path: "Sources/CByteScan"),
        // libyaml (Debian libyaml-dev) for the configuration file: Yams wraps the same parser but
        // imports Foundation, whose ICU tables Gatehouse does not load (docs/architecture.md).
        .systemLibrary(name: "CYAML", path: "Sources/CYAML"),
        .target(name: "CTraceID", path: "Sources/CTraceID"),

        // HTTP/1.1 codec: message types, head parsers, body framing, chunked coder, head encoders.
        // Pure values and functions: no sockets, no loops, no logging.
        .target(name: "HTTP1", dependencies: ["CByteScan", "CTraceID"], swiftSettings: settings),
        // epoll event loops, timers, non-blocking sockets and the read buffer. Knows nothing of HTTP.
        .target(name: "EventLoops", dependencies: ["CLinux", "GatehouseTime"], swiftSettings: settings),
        // TLS on the event loops' non-blocking sockets (OpenSSL): one connection's records
        // (`TLSStream`), a TLS tunnel endpoint, and the HTTPS listener's certificate and contexts.
        .target(name: "TLSTransport", dependencies: ["COpenSSL", "EventLoops"], swiftSettings: settings),
        // NIO-free HTTP/1.1 server: connections, accept loop, handler protocols. Knows nothing of OAuth.
        .target(name: "HTTPServer",
                dependencies: ["CLinux", "HTTP1", "EventLoops", "TLSTransport", .product(name: "Logging", package: "swift-log")],
                swiftSettings: settings),
        // Outbound HTTP/1.1: the pooled keep-alive client on the server's event loops, plain or TLS
        // (upstreams, `wss://` tunnels), and whole-answer fetches on it (provider calls).
        .target(name: "HTTPClient",
                dependencies: ["COpenSSL", "HTTP1", "EventLoops", "TLSTransport"],
                swiftSettings: settings),
        // Byte encodings shared by every module: base64/base64url, percent-coding, hex, constant-time
        // comparison, secure random tokens. Standard library only (and getrandom from the C library).
        .target(name: "GatehouseEncoding", swiftSettings: settings),
        // The gateway's clock: wall time in Unix seconds and a monotonic reading, the conversions
        // between time units, calendar dates. Standard library only; tests use a manual clock.
        .target(name: "GatehouseTime", swiftSettings: settings),
        // Configuration, logging, routes and header policy: pure values and functions.
        .target(name: "GatehouseCore",
                dependencies: ["GatehouseEncoding", "GatehouseTime", "HTTP1", .product(name: "Logging", package: "swift-log")],
                swiftSettings: settings),
        // OpenID Connect protocol logic: PKCE, discovery, JWKS, ID/logout token validation, token client.
        .target(name: "GatehouseOIDC",
                dependencies: ["GatehouseEncoding",
                               .product(name: "Crypto", package: "swift-crypto"),
                               // RSA-OAEP and AES-CBC for encrypted ID tokens and UserInfo (jwt-kit links it already).
                               .product(name: "CryptoExtras", package: "swift-crypto"),
                               .product(name: "JWTKit", package: "jwt-kit")],
                swiftSettings: settings),
        // Build time only: writes `EmbeddedMigrations` from Migrations/*.sql and Migrations/postgres/*.sql,
        // so the binary carries its schema wherever it runs and the shipped files are the only copy.
        .executableTarget(name: "embed-migrations", path: "Sources/EmbedMigrationsTool", swiftSettings: settings),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["embed-migrations"],
                path: "Sources/EmbedMigrationsPlugin"),
        // Server-side sessions in SQLite or PostgreSQL: migrations, store, token sealing.
        .target(name: "GatehouseSessions",
                dependencies: ["CSQLite", "CLibPQ", "CLinux", "GatehouseEncoding",
                               .product(name: "Crypto", package: "swift-crypto"),
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: settings,
                plugins: ["EmbedMigrations"]),
        // The SPA's static files: MIME, ETag, gzip (zlib), ranges, path safety.
        .target(name: "GatehouseStatic",
                dependencies: ["CZlib", "GatehouseEncoding", "GatehouseTime", "HTTP1", "HTTPServer", .product(name: "Logging", package: "swift-log")],
                swiftSettings: settings),
        // The configuration file (`GATEHOUSE_CONFIG`): YAML read into the variables the loader
        // knows, each with its line; `${NAME}` and `*_file` secrets; the JSON Schema.
        .target(name: "GatehouseConfigFile", dependencies: ["CYAML", "GatehouseCore"], swiftSettings: settings),
        // OpenTelemetry traces: the OTEL_* settings, span records, their OTLP/HTTP protobuf body,
        // and the batching export thread (on the HTTP client; no SDK, no NIO).
        .target(name: "GatehouseTelemetry",
                dependencies: ["GatehouseEncoding", "GatehouseTime", "HTTP1", "EventLoops", "HTTPClient",
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: settings),
        // The product: endpoints, proxy, metrics, wiring.
        .target(name: "Gatehouse",
                dependencies: ["HTTP1", "EventLoops", "HTTPServer", "HTTPClient", "TLSTransport", "GatehouseCore", "GatehouseEncoding", "GatehouseOIDC",
                               "GatehouseTime", "GatehouseConfigFile", "GatehouseTelemetry",
                               "GatehouseSessions", "GatehouseStatic",
                               .product(name: "Logging", package: "swift-log"),
                               // SHA-1 for the WebSocket handshake's Sec-WebSocket-Accept (RFC 6455 §4.2.2).
                               .product(name: "Crypto", package: "swift-crypto")],
                swiftSettings: settings),
        // Development OpenID provider for `gatehouse demo` and in-process tests. Loopback only.
        .target(name: "DevProvider",
                dependencies: ["GatehouseEncoding", "HTTP1", "EventLoops", "HTTPServer",
                               // `FetchClient` delivers back-channel logout tokens.
                               "HTTPClient",
                               .product(name: "Crypto", package: "swift-crypto"),
                               .product(name: "JWTKit", package: "jwt-kit"),
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: settings),
        // The `gatehouse` command line. Its folder is `GatehouseCLI`: `Sources/gatehouse` and
        // `Sources/Gatehouse` would be one folder on a case-insensitive file system.
        .executableTarget(name: "gatehouse",
                          dependencies: ["Gatehouse", "DevProvider", "GatehouseCore", "GatehouseConfigFile", "CLinux", "GatehouseEncoding", "GatehouseOIDC", "GatehouseSessions", "GatehouseTelemetry", "GatehouseTime",
                                         "HTTP1", "EventLoops", "HTTPServer", "TLSTransport",
                                         .product(name: "Crypto", package: "swift-crypto"),
                                         .product(name: "ArgumentParser", package: "swift-argument-parser"),
                                         .product(name: "Logging", package: "swift-log")],
                          path: "Sources/GatehouseCLI",
                          exclude: ["gatehouse.order"],
                          swiftSettings: settings,
                          linkerSettings: linkOrder),

        // The tests' raw HTTP/1.1 client (a blocking socket that reads responses by their framing).
        .target(name: "TestSupport", dependencies: ["HTTP1", "EventLoops", "GatehouseTime"], path: "Tests/TestSupport",
                swiftSettings: settings),
        // The tests mirror the modules: each low-level module's own target, the gateway's in one.
        .testTarget(name: "EventLoopsTests", dependencies: ["EventLoops"], swiftSettings: settings),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "CByteScan", "TestSupport"], swiftSettings: settings),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "HTTP1", "EventLoops", "COpenSSL"], swiftSettings: settings),
        .testTarget(name: "HTTPServerTests",
                    dependencies: ["HTTP1", "EventLoops", "HTTPServer", "TestSupport", "GatehouseTime",
                                   .product(name: "Logging", package: "swift-log")],
                    swiftSettings: settings),
        .testTarget(name: "GatehouseTests",
                    dependencies: ["Gatehouse", "GatehouseCore", "GatehouseConfigFile", "GatehouseEncoding", "GatehouseOIDC", "GatehouseSessions",
                                   "GatehouseStatic", "GatehouseTelemetry", "DevProvider", "HTTP1", "EventLoops", "HTTPServer", "HTTPClient", "TLSTransport", "CZlib", "CSQLite",
                                   "TestSupport", "GatehouseTime",
                                   .product(name: "JWTKit", package: "jwt-kit"),
                                   .product(name: "Crypto", package: "swift-crypto"),
                                   .product(name: "CryptoExtras", package: "swift-crypto"),
                                   .product(name: "Logging", package: "swift-log")],
                    swiftSettings: settings),
    ]
)
