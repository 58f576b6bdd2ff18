import Testing

/// Starts one `tollgate dev` around a whole suite (each start-up takes seconds) and stops it after the
/// suite's last test; the tests reach it through `DevProcess.current`.
struct SharedDevProcess: SuiteTrait, TestScoping {
    /// Once for the suite, not again for each test in it.
    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let dev = try await DevProcess.start()
        do {
            try await DevProcess.$current.withValue(dev) { try await function() }
        } catch {
            _ = await dev.stop()
            throw error
        }
        // It also stops as it should: gracefully, on SIGTERM, with status 0.
        if let problem = await dev.stop() { Issue.record(Comment(rawValue: problem)) }
    }
}

extension Trait where Self == SharedDevProcess {
    static var sharedDevProcess: Self { Self() }
}

/// The tests that share one `tollgate dev`, one at a time: each makes its own purchases and users, and
/// asserts on its own, so the order they run in does not matter.
@Suite("Against a running tollgate dev", .serialized, .sharedDevProcess)
struct DevEndToEndTests {
    /// The shared process (a test outside the suite has none).
    static func dev() throws -> DevProcess {
        try #require(DevProcess.current, "runs inside the suite's shared tollgate dev")
    }
}
