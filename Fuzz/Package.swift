// swift-tools-version:6.2
import PackageDescription

// libFuzzer targets for Tollgate's parsers (`make fuzz`, docs/fuzzing.md). A package of its own so
// the root package's `swift build` and `swift test` never build them: they link libFuzzer (`-sanitize=fuzzer`)
// and hand it their test function, and they import Verifiers and Toolkit with @testable (`-enable-testing`).
let fuzzer: [Target.Dependency] = ["FuzzSupport", .product(name: "TollgateVerifiers", package: "tollgate")]

let package = Package(
    name: "tollgate-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "tollgate", path: ".."),
    ],
    targets: [
        .target(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer", .product(name: "TollgateVerifiers", package: "tollgate")]),
        .executableTarget(name: "FuzzJSON", dependencies: fuzzer),
        .executableTarget(name: "FuzzJWS", dependencies: fuzzer),
        .executableTarget(name: "FuzzPubSub", dependencies: fuzzer),
        .executableTarget(name: "FuzzForm", dependencies: fuzzer),
        .executableTarget(name: "FuzzSenders", dependencies: fuzzer),
    ],
    swiftLanguageModes: [.v6]
)
