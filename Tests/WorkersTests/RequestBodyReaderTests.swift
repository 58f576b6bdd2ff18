import HTTPTypes
import Hummingbird
import NIOCore
import Rejections
import ServiceHost
import TestSupport
import Testing

/// Every route reads its body through `RequestBodyReader`: the answer says which of size, time or a
/// broken stream stopped it.
@Suite("One body reader for every route")
struct RequestBodyReaderTests {
    struct Broken: Error {}

    /// Chunks, then (when `failure` is set) that error instead of the end.
    struct Chunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let chunks: [[UInt8]]
        let failure: (any Error & Sendable)?

        struct AsyncIterator: AsyncIteratorProtocol {
            var left: [[UInt8]]
            let failure: (any Error & Sendable)?
            mutating func next() async throws -> ByteBuffer? {
                if !left.isEmpty { return ByteBuffer(bytes: left.removeFirst()) }
                if let failure { throw failure }
                return nil
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: chunks, failure: failure) }
    }

    static func request(_ chunks: [[UInt8]], failure: (any Error & Sendable)? = nil, announced: Int? = nil) -> Request {
        var head = HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/v1/purchases")
        if let announced { head.headerFields[.contentLength] = String(announced) }
        return Request(head: head, body: RequestBody(asyncSequence: Chunks(chunks: chunks, failure: failure)))
    }

    static func outcome(_ request: Request, maxBytes: Int = 10) async -> Result<[UInt8], Rejection> {
        do throws(Rejection) { return .success(try await RequestBodyReader.read(request, maxBytes: maxBytes)) } catch { return .failure(error) }
    }

    static func reason(_ request: Request) async -> String? {
        if case .failure(let rejection) = await outcome(request) { return "\(rejection.httpStatus) \(rejection.code)" }
        return nil
    }

    @Test("a body within the bound is read whole, across chunks")
    func whole() async throws {
        let read = try await Self.outcome(Self.request([[1, 2, 3], [4, 5]])).get()
        #expect(read == [1, 2, 3, 4, 5])
    }

    @Test("413 only for size: announced, or streamed past the bound")
    func size() async {
        #expect(await Self.reason(Self.request([[1]], announced: 11)) == "413 body_too_large")
        #expect(await Self.reason(Self.request([[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11]])) == "413 body_too_large")
    }

    @Test("a body that breaks before its end is 400 unreadable_body, and one past its deadline 408 body_timeout, never 413")
    func brokenOrLate() async {
        #expect(await Self.reason(Self.request([[1, 2]], failure: Broken())) == "400 unreadable_body")
        #expect(await Self.reason(Self.request([[1, 2]], failure: RequestBodyTimeout(milliseconds: 5_000))) == "408 body_timeout")
    }
}
