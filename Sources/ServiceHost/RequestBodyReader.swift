import Hummingbird
import NIOCore
import Rejections

/// Sent down the pipeline by the gateway's `ConnectionGuard` when a body does not arrive in time
/// (`http.bodyTimeoutMs`): the route's body read fails with it, so the route answers 408 `body_timeout`
/// itself and counts it once.
public struct RequestBodyTimeout: Error, CustomStringConvertible {
    public let milliseconds: Int64

    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    public var description: String { "the body did not arrive within \(milliseconds) ms of the request head" }
}

/// How every route reads a body: whole, at most `maxBytes`. An announced oversize body is refused before
/// it is read and a streamed one as soon as it passes the bound, so no caller makes a process buffer
/// more: 413 `body_too_large` for size only, 408 `body_timeout` at the connection's deadline, and 400
/// `unreadable_body` for anything else (the client hung up, the framing broke).
public enum RequestBodyReader {
    public static func read(_ request: Request, maxBytes: Int) async throws(Rejection) -> [UInt8] {
        let tooLarge = Rejection(.bodyTooLarge, "the body is larger than \(maxBytes) bytes")
        if let announced = request.headers[.contentLength].flatMap(Int.init), announced > maxBytes {
            throw tooLarge
        }
        do {
            let buffer = try await request.body.collect(upTo: maxBytes)
            return Array(buffer.readableBytesView)
        } catch is NIOTooManyBytesError {
            throw tooLarge
        } catch let timeout as RequestBodyTimeout {
            throw Rejection(.bodyTimeout, timeout.description)
        } catch {
            throw Rejection(.unreadableBody, "the body could not be read to its end")
        }
    }
}
