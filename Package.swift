// swift-tools-version:6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "tollgate",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tollgate", targets: ["tollgate"]),
        .executable(name: "tollgate-bench", targets: ["Bench"]),
        .executable(name: "tollgate-load", targets: ["LoadGen"]),
        // For the fuzz package in Fuzz/ (`make fuzz`), which builds the parsers with libFuzzer.
        .library(name: "TollgateVerifiers", targets: ["Verifiers", "Rejections", "ProviderAPIs", "Toolkit"]),
    ],
    dependencies: [
        // traits: [] drops swift-configuration and the full-Foundation extras we do not use.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // The HTTP part types Hummingbird's pipeline carries, for the gateway's own channel handlers.
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // The PostgreSQL client (the store's PostgreSQL driver), and the TLS its connections use.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // The merchant APIs' request context and authenticator middleware (AuthRequestContext, AuthenticatorMiddleware).
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        // The operator console's pages (Mustache templates shipped in the binary).
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        .systemLibrary(name: "CRdKafka", pkgConfig: "rdkafka", providers: [.apt(["librdkafka-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // epoll, timerfd and CPU affinity, which Glibc's module leaves out: the load generator's event loop.
        .systemLibrary(name: "CLinux"),
        .target(
            name: "Kafka",
            dependencies: ["CRdKafka", .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            swiftSettings: strict
        ),
        .target(name: "Events", swiftSettings: strict),
        // Why a request is refused: `Rejection`, the `ReasonCode` protocol each domain's enum conforms to, the
        // reasons common to every route. Each domain (Verifiers, Merchant) owns its enum.
        .target(name: "Rejections", dependencies: ["Events"], swiftSettings: strict),
        .target(
            name: "Config",
            dependencies: ["Events", .product(name: "Yams", package: "Yams")],
            swiftSettings: strict
        ),
        // What every sender and several workers use: OpenSSL wrappers, JSON, JOSE, base64, forms, the outbound HTTP seam.
        .target(name: "Toolkit", dependencies: ["COpenSSL"], swiftSettings: strict),
        // One folder per sender (settings, routes, verification, normalization, load traffic) and the seam they share.
        .target(
            name: "Verifiers",
            dependencies: ["Toolkit", "Events", "Config", "ProviderAPIs", "Rejections"],
            swiftSettings: strict
        ),
        // The server APIs Tollgate calls (the App Store Server API, the Play Developer API, Antom's API): each
        // client, its models, errors and metrics; one timed fetch. Takes plain settings values, knows no configuration.
        .target(
            name: "ProviderAPIs",
            dependencies: ["Toolkit", "Events",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "Metrics", package: "swift-metrics")],
            swiftSettings: strict
        ),
        .target(
            name: "Outbound",
            dependencies: ["Toolkit",
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "NIOSSL", package: "swift-nio-ssl")],
            swiftSettings: strict
        ),
        // What every Tollgate process runs its services with: the stop order over ServiceGroup, the
        // `/healthz`, `/readyz`, `/metrics` routes, the 404/405 answers and the error response every server shares.
        .target(
            name: "ServiceHost",
            dependencies: [
                "Rejections", "Toolkit",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "Gateway",
            dependencies: [
                "Kafka", "Events", "Config", "Verifiers", "Rejections", "Toolkit", "Outbound", "ServiceHost", "Spool",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The storage layer: the SQLite (every sqlite3* call lives here) and PostgreSQL (postgres-nio)
        // drivers behind one synchronous SQL API on connection lanes, the migrations runner, StoreError.
        // Knows no table of its own.
        .target(
            name: "Store",
            dependencies: ["CSQLite",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "PostgresNIO", package: "postgres-nio"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOSSL", package: "swift-nio-ssl")],
            swiftSettings: strict
        ),
        // The entitlement rules over the storage layer: the model (purchases, entitlements), their tables
        // and migrations, batch planning and replay, and the projection of a normalized event into a
        // purchase change.
        .target(
            name: "Entitlements",
            dependencies: ["Store", "Events", "Toolkit", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // The gateway's delivery spool: its own SQLite file through Store's SQLite driver, records as BLOBs,
        // group commit, an flock so one process owns it.
        .target(
            name: "Spool",
            dependencies: ["Store", "Kafka", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // What the merchant's apps and backends call, and the jobs that keep their purchases true: the merchant
        // APIs' credentials, the entitlement API, purchases and /v1/validate, checkouts, Sileo, the answers to
        // Apple's consumption requests, reconciliation.
        .target(
            name: "Merchant",
            dependencies: [
                "Kafka", "Events", "Config", "Store", "Verifiers", "Rejections", "Toolkit", "ServiceHost", "Entitlements", "ProviderAPIs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // Outbound webhooks to merchants' backends: the endpoints, their Standard Webhooks signatures, what the
        // projection records for them, the queue of deliveries per endpoint and lane, and the dispatcher.
        .target(
            name: "Webhooks",
            dependencies: ["Toolkit", "Events", "Config", "Store", "Entitlements", "Merchant", "Outbound", "ServiceHost",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "Metrics", package: "swift-metrics"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            swiftSettings: strict
        ),
        // The operator console: sign-in, sessions, the pages (docs/console.md).
        .target(
            name: "Console",
            dependencies: ["Config", "Entitlements", "Events", "Store", "Rejections", "Toolkit", "ServiceHost",
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "Mustache", package: "swift-mustache"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "Metrics", package: "swift-metrics")],
            swiftSettings: strict
        ),
        .target(
            name: "Workers",
            dependencies: [
                "Kafka", "Events", "Config", "Store", "Verifiers", "Rejections", "Toolkit", "ServiceHost", "Entitlements", "Merchant", "ProviderAPIs",
                "Webhooks", "Console",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "tollgate",
            dependencies: [
                "Kafka", "Events", "Config", "Verifiers", "Rejections", "Toolkit", "Outbound", "Gateway", "Workers", "Merchant", "ProviderAPIs", "Store", "ServiceHost", "Entitlements", "Spool", "Console",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // `make bench`: micro-benchmarks of the verifiers against raw OpenSSL, measured in one run,
        // the workers' projection throughput into SQLite and PostgreSQL with the embedded broker in the loop,
        // and outbound webhook deliveries to an HTTPS receiver (Hummingbird with TLS).
        .executableTarget(
            name: "Bench",
            dependencies: ["Verifiers", "Rejections", "Toolkit", "Events", "Config", "Kafka", "Store", "Workers", "Merchant", "Gateway", "Entitlements", "Spool",
                           "Webhooks", "Outbound",
                           .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTLS", package: "hummingbird"),
                           .product(name: "NIOSSL", package: "swift-nio-ssl"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            swiftSettings: strict),
        // `make bench`: signs realistic traffic for every sender and drives a running gateway over HTTP/1.1
        // keep-alive connections, closed-loop and open-loop, reading the gateway's CPU time and memory from /proc.
        .executableTarget(name: "LoadGen", dependencies: ["CLinux", "Verifiers", "Rejections", "Toolkit", "Events"], swiftSettings: strict),
        // Shared by the test targets: child processes and other blocking work kept off the pool.
        .target(name: "TestSupport", dependencies: ["Kafka", "Toolkit", "Verifiers", "Rejections"], path: "Tests/TestSupport", swiftSettings: strict),
        .testTarget(name: "KafkaTests", dependencies: ["Kafka", "TestSupport"], swiftSettings: strict),
        // Runs the built `tollgate` binary, so it tests the command line exactly as users call it (and imports
        // its module for the few pure pieces, such as the JSON log line). The other modules only look on: Kafka reads and writes topics, Workers names the dead-letter headers, Entitlements reads the outbox.
        .testTarget(name: "CLITests", dependencies: ["tollgate", "TestSupport", "StoreTestSupport", "Outbound", "Verifiers", "Rejections", "Toolkit", "Kafka", "Events", "Workers", "Merchant", "ProviderAPIs", "Store", "Entitlements", "Gateway",
                                                     .product(name: "Logging", package: "swift-log")],
                    swiftSettings: strict),
        // Fresh SQLite files and PostgreSQL databases for the store and worker tests.
        .target(name: "StoreTestSupport", dependencies: ["Store", "Entitlements", "TestSupport", .product(name: "Logging", package: "swift-log")],
                path: "Tests/StoreTestSupport", swiftSettings: strict),
        .testTarget(name: "StoreTests", dependencies: ["Store", "TestSupport", "StoreTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "WorkersTests",
            dependencies: ["Workers", "Merchant", "ProviderAPIs", "Rejections", "Store", "Kafka", "Events", "Config", "Verifiers", "Toolkit", "Outbound", "Gateway", "TestSupport", "StoreTestSupport", "Entitlements", "ServiceHost", "Webhooks", "Console",
                           .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"),
                           .product(name: "Prometheus", package: "swift-prometheus"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           // The entitlement API's requests and answers, built and read without a socket.
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "NIOEmbedded", package: "swift-nio")],
            swiftSettings: strict
        ),
        .testTarget(name: "EventsTests", dependencies: ["Events"], swiftSettings: strict),
        .testTarget(name: "WebhooksTests", dependencies: ["Webhooks", "Config", "Entitlements", "Events", "Store", "Toolkit", "TestSupport", "StoreTestSupport"], swiftSettings: strict),
        .testTarget(name: "ConfigTests", dependencies: ["Config", "Events", "Verifiers", "Rejections"], swiftSettings: strict),
        .testTarget(name: "VerifiersTests", dependencies: ["Verifiers", "ProviderAPIs", "Rejections", "Toolkit", "Events", "Config", "Outbound", "TestSupport"],
                    swiftSettings: strict),
        .testTarget(
            name: "GatewayTests",
            dependencies: ["Gateway", "Kafka", "Events", "Config", "Verifiers", "Rejections", "Toolkit", "TestSupport", "Spool", "Store", "ServiceHost",
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
