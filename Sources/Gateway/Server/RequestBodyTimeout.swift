/// Sent down the pipeline by `ConnectionGuard` when a body does not arrive in time: the route's body
/// read fails with it, so the route answers 408 `body_timeout` itself and counts it once.
struct RequestBodyTimeout: Error, CustomStringConvertible {
    let milliseconds: Int64

    var description: String { "the body did not arrive within \(milliseconds) ms of the request head" }
}
