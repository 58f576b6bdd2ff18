import HTTPTypes
import Hummingbird
import NIOCore
import Verifiers

extension Rejection {
    /// The HTTP answer of a refusal: the reason's status and the `{"error","message"}` body
    /// (`jsonBody`), on every route of every server.
    public func response(extraHeaders: HTTPFields = [:]) -> Response {
        var headers = extraHeaders
        headers[.contentType] = "application/json"
        return Response(status: HTTPResponse.Status(code: reason.httpStatus), headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: jsonBody)))
    }
}
