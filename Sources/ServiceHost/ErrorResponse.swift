import HTTPTypes
import Hummingbird
import NIOCore
import Rejections

/// A refusal thrown from a handler is answered as every refusal is (`response()`).
extension Rejection: HTTPResponseError {
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: reason.httpStatus) }

    public func response(from request: Request, context: some RequestContext) throws -> Response { response() }
}

extension Rejection {
    /// `Retry-After` and `WWW-Authenticate`, when the refusal has them.
    public var headers: HTTPFields {
        var headers = HTTPFields()
        if let retryAfterSeconds { headers[.retryAfter] = String(retryAfterSeconds) }
        if let challenge { headers[.wwwAuthenticate] = challenge }
        return headers
    }

    /// The HTTP answer of a refusal: the reason's status, the `{"error","message"}` body (`jsonBody`),
    /// `Retry-After` and `WWW-Authenticate` when it has them; on every route of every server.
    public func response(extraHeaders: HTTPFields = [:]) -> Response {
        var headers = extraHeaders
        headers[.contentType] = "application/json"
        for field in self.headers where headers[field.name] == nil { headers.append(field) }
        return Response(status: HTTPResponse.Status(code: reason.httpStatus), headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: jsonBody)))
    }
}
