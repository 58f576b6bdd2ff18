/// Waits for asynchronous work by polling `condition` until it holds, failing after `timeout`: the
/// end-to-end tests never sleep a fixed time and then assert. The default bound allows for consumer-group
/// rebalances on a loaded machine (the mock cluster waits up to 9 s for a member that joins late).
func waitUntil(_ what: @autoclosure () -> String, timeout: Duration = .seconds(60), every interval: Duration = .milliseconds(20),
               _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what(), timeout: timeout) }
        try await Task.sleep(for: interval)
    }
}

struct WaitTimedOut: Error, CustomStringConvertible {
    var what: String
    var timeout: Duration
    var description: String { "timed out after \(timeout) waiting for \(what)" }
}
