import HTTPTypes
import Hummingbird
import NIOCore
import Senders

/// Every refusal answers `{"error": "<reason code>", "message": "..."}`.
enum ErrorBody {
    static func response(_ rejection: Rejection, extraHeaders: HTTPFields = [:]) -> Response {
        var headers = extraHeaders
        headers[.contentType] = "application/json"
        return Response(status: HTTPResponse.Status(code: rejection.reason.httpStatus),
                        headers: headers, body: ResponseBody(byteBuffer: json(rejection)))
    }

    /// The body alone, for answers written below the router (`ConnectionGuard`).
    static func json(_ rejection: Rejection) -> ByteBuffer { ByteBuffer(bytes: rejection.jsonBody) }
}
